"""A studentized spherical-harmonic two-sample test for compositions: size, power (ICML 2026).

The study package: ``config.py`` (the config dataclasses, the baseline list and the
scenario rules ``validate`` checks), ``recipe.py`` (the data check, the Monte Carlo loop,
``STUDY``), ``analysis.py`` (tables, figures, claims), ``data.py`` (``raystudy data
make-compositions``), and ``profiles/`` and ``spaces/``. ``STUDY`` is built on first
access, so ``raystudy list`` reads this docstring without importing the recipe.
"""

from __future__ import annotations

from raystudy import lazy_study
from raystudy.studies.compositional_two_sample.data import (
    DATA_COMMANDS,  # `raystudy data` reads them here
)

__all__ = ["DATA_COMMANDS", "STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
