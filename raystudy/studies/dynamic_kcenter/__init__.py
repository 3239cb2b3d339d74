"""Dynamic k-center with outliers: layered sampling (reconstructed) vs radius guessing (ICML 2026).

The study package: ``config.py`` (the frozen config, the algorithms, the derived sizes),
``recipe.py`` (the stream loop, the evaluation, ``STUDY``), ``analysis.py`` (claims K1-K4,
the tables and figures), ``data.py`` (the instance, the CSV check, ``raystudy data
make-kcenter``), ``profiles/`` and ``spaces/``. ``STUDY`` is built on first access, so
``raystudy list`` reads this docstring without importing the recipe.
"""

from __future__ import annotations

from raystudy import lazy_study
from raystudy.studies.dynamic_kcenter.data import (
    DATA_COMMANDS,  # `raystudy data` reads them here
)

__all__ = ["DATA_COMMANDS", "STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
