"""GADC: real-subset selection by one-sided partial OT for diffusion training (ICML 2026).

The study package: ``recipe.py`` (config, data, the loop, ``STUDY``), ``analysis.py``
(tables, figures, claims), ``profiles/`` and ``spaces/``. ``STUDY`` is built on first access.
"""

from __future__ import annotations

from raystudy import lazy_study

__all__ = ["STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
