"""Same-graph NC <-> LP transfer, leakage-free vs leaky (Akula et al., ICML 2026).

The study package: ``config.py`` (the config dataclasses, the mechanism names, the
synthetic-graph defaults), ``recipe.py`` (the graph, the trial loop, ``STUDY``),
``analysis.py`` (the ``analyze`` hook: records and claims), ``summary.py`` (its tables,
notes and summary) and ``figures.py`` (its figures), and ``profiles/`` and ``spaces/``.
``STUDY`` is built on first access, so ``raystudy list`` reads this docstring without
importing the recipe.
"""

from __future__ import annotations

from raystudy import lazy_study

DATA_COMMANDS = ()  # no `raystudy data` command: the registry need not build STUDY to know


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
