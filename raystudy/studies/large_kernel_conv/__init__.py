"""WBMM (windowed batch matmul) against depthwise convolution: operator timing blocks (ICML 2026).

The study package: ``config.py`` (the config dataclasses and the shape parser),
``recipe.py`` (the timing block, the proxy's training loop, ``STUDY``), ``analysis.py``
(tables, figures, claims), ``proxy.py`` (the accuracy proxy's net and task), and
``profiles/`` and ``spaces/``. ``STUDY`` is built on first access, so ``raystudy list``
reads this docstring without importing the recipe.
"""

from __future__ import annotations

from raystudy import lazy_study

__all__ = ["STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
