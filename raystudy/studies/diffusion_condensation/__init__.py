"""GADC: real-subset selection by one-sided partial OT for diffusion training (ICML 2026).

The study package: ``recipe.py`` (config, data, the loop, ``STUDY``), ``analysis.py``
(tables, figures, claims), ``profiles/`` and ``spaces/``. ``STUDY`` is built on first access.
"""

from __future__ import annotations

from typing import Any

__all__ = ["STUDY"]


def __getattr__(name: str) -> Any:
    if name == "STUDY":
        from raystudy.studies.diffusion_condensation.recipe import STUDY

        return STUDY
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
