"""WBMM (windowed batch matmul) against depthwise convolution: operator timing blocks (ICML 2026).

The study package: ``recipe.py`` (config, the timing block, ``STUDY``), ``analysis.py``
(tables, figures, claims), ``profiles/`` and ``spaces/``. ``STUDY`` is built on first
access, so ``raystudy list`` reads this docstring without importing the recipe.
"""

from __future__ import annotations

from typing import Any

__all__ = ["STUDY"]


def __getattr__(name: str) -> Any:
    if name == "STUDY":
        from raystudy.studies.large_kernel_conv.recipe import STUDY

        return STUDY
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
