"""Hessian spectral collapse and L2-ER in continual supervised and RL (ICML 2026).

The study package: ``config.py`` (the config dataclasses, the stream and environment name
lists, the rules ``validate`` checks), ``recipe.py`` (data, model, the supervised loop,
``STUDY``), ``rl.py`` (the RL stream's loop), ``interventions.py`` (``intervention.spec``:
its grammar and pieces), ``measure.py`` (the task-start and within-task metrics),
``analysis.py`` (the report), ``curves.py`` and ``plots.py`` (its numbers and figures), and
``profiles/`` and ``spaces/``. ``STUDY`` is built on first access, so ``raystudy list``
reads this docstring without importing the recipe.
"""

from __future__ import annotations

from raystudy import lazy_study

DATA_COMMANDS = ()  # no `raystudy data` command: the registry need not build STUDY to know


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
