"""A study package's ``STUDY``, built on first access: ``raystudy list`` reads the
package's docstring, and ``raystudy data`` its ``DATA_COMMANDS``, without importing the
recipe (torch, the study's extras)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_study(package: str, recipe: str = "recipe") -> Callable[[str], Any]:
    """A module ``__getattr__`` for a study package: ``STUDY`` comes from
    ``package.recipe`` when first asked for. Use as ``__getattr__ = lazy_study(__name__)``."""

    def __getattr__(name: str) -> Any:
        if name == "STUDY":
            return importlib.import_module(f"{package}.{recipe}").STUDY
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
