"""GP priors learned by EM from a corpus vs per-task kernels (Empirical GPs, ICML 2026).

The study package: ``config.py`` (the config dataclasses, the task families and their
defaults, the compared methods), ``recipe.py`` (the corpus and test curves, the EM fit and
the baselines, the trial loop, ``STUDY``), ``analysis.py`` (tables, figures, claims), and
``profiles/`` and ``spaces/``. ``STUDY`` is built on first access, so ``raystudy list``
reads this docstring without importing the recipe.
"""

from __future__ import annotations

from raystudy import lazy_study

DATA_COMMANDS = ()  # no `raystudy data` command: the registry need not build STUDY to know


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
