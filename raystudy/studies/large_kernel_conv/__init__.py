"""WBMM (windowed batch matmul) against depthwise convolution: operator timing blocks (ICML 2026).

The study package: ``recipe.py`` (config, the timing block, ``STUDY``), ``analysis.py``
(tables, figures, claims), ``profiles/`` and ``spaces/``. ``STUDY`` is built on first
access, so ``raystudy list`` reads this docstring without importing the recipe.
"""

from __future__ import annotations

from raystudy import lazy_study

__all__ = ["STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
