"""DLA's information-aware state merging vs fixed multi-state policies at an equal state
budget, on generated recall and piecewise streams (Dynamic Linear Attention, ICML 2026).

The study package: ``config.py`` (the frozen config, the tasks and the state budget),
``recipe.py`` (the recall loop on the cadence, the training-free mechanism task,
``STUDY``), ``analysis.py`` (claims D1-D4, tables, figures), ``profiles/`` and ``spaces/``.
``STUDY`` is built on first access.
"""

from __future__ import annotations

from raystudy import lazy_study

__all__ = ["STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
