"""Learning-rate robustness of MuonMax/Momo vs AdamW, MuonAdam (Crawshaw et al., ICML 2026).

The study package: ``config.py`` (the config dataclasses), ``recipe.py`` (the batches, the
GPT training loop, ``STUDY``), ``analysis.py`` (the ``analyze`` hook: the robust-width
claims), ``curves.py`` (its robustness table and loss-vs-learning-rate figure), ``data.py``
(``raystudy data make-tokens``), and ``profiles/`` and ``spaces/``. ``STUDY`` is built on
first access, so ``raystudy list`` reads this docstring without importing the recipe.
"""

from __future__ import annotations

from raystudy import lazy_study
from raystudy.studies.optimizer_robustness.data import (
    DATA_COMMANDS,  # `raystudy data` reads them here
)

__all__ = ["DATA_COMMANDS", "STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
