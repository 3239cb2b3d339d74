"""Chronological vs shuffled pretraining data and time-sensitive knowledge (ICML 2026).

The study package: ``config.py`` (the config dataclasses and the rules ``validate``
checks), ``recipe.py`` (data, probes, the training loop, ``STUDY``), ``analysis.py``
(tables, figures, claims with their preconditions), ``references.py`` (the year error per
question year and its chance references, from the world), ``data.py`` (``raystudy data
make-temporal-world``), and ``profiles/`` and ``spaces/``. ``STUDY`` is built on first
access.
"""

from __future__ import annotations

from raystudy import lazy_study
from raystudy.studies.temporal_pretraining.data import DATA_COMMANDS

__all__ = ["DATA_COMMANDS", "STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
