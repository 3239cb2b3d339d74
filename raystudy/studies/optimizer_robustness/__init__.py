"""Learning-rate robustness of MuonMax/Momo vs AdamW, MuonAdam (Crawshaw et al., ICML 2026).

The study package: ``recipe.py`` (config, data, model, loop, ``STUDY``), its own helpers
beside it, and ``profiles/`` and ``spaces/``. ``STUDY`` is built on first access, so
``raystudy list`` reads this docstring without importing the recipe.
"""

from __future__ import annotations

from raystudy import lazy_study
from raystudy.studies.optimizer_robustness.make_data import (
    DATA_COMMANDS,  # `raystudy data` reads them here
)

__all__ = ["DATA_COMMANDS", "STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
