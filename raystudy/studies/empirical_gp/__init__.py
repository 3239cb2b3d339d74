"""GP priors learned by EM from a corpus vs per-task kernels (Empirical GPs, ICML 2026).

The study package: ``recipe.py`` (config, data, model, loop, ``STUDY``), its own helpers
beside it, and ``profiles/`` and ``spaces/``. ``STUDY`` is built on first access, so
``raystudy list`` reads this docstring without importing the recipe.
"""

from __future__ import annotations

from typing import Any

DATA_COMMANDS = ()  # no `raystudy data` command: the registry need not build STUDY to know


def __getattr__(name: str) -> Any:
    if name == "STUDY":
        from raystudy.studies.empirical_gp.recipe import STUDY

        return STUDY
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
