"""Offline imitation from good + bad demos: DualCOIL vs BC, DemoDICE, SafeDICE, DWBC (ICML 2026).

The study package: ``config.py`` (the config dataclasses, the method, source, task and
preset names, the rules ``validate`` checks), ``recipe.py`` (the learners, the Ray Data
sets, the training loop, ``STUDY``), ``data.py`` (which sets each method reads, where
episodes come from, the data check, ``raystudy data make-offline-rl``), ``analysis.py``
(the report) and ``comparison.py`` (its claim check and figures), and ``profiles/`` and
``spaces/``. ``STUDY`` is built on first access, so ``raystudy list`` reads this docstring
without importing the recipe.
"""

from __future__ import annotations

from raystudy import lazy_study
from raystudy.studies.contrastive_imitation.data import (
    DATA_COMMANDS,  # `raystudy data` reads them here
)

__all__ = ["DATA_COMMANDS", "STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
