"""Typed config fields: bounds checked by the config layer with the key named, and the
small ``name/arg+name`` spec grammar."""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated, Any

from raystudy.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Range:
    """Bounds of a numeric field, checked by the config layer: ``Annotated[int, Range(ge=1)]``."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def check(self, key: str, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{key}={value} must be a finite number")
        for bound, ok, word in ((self.ge, lambda b: value >= b, ">="),
                                (self.gt, lambda b: value > b, ">"),
                                (self.le, lambda b: value <= b, "<="),
                                (self.lt, lambda b: value < b, "<")):
            if bound is not None and not ok(bound):
                raise ConfigError(f"{key}={value} must be {word} {bound:g}")


PositiveInt = Annotated[int, Range(ge=1)]
NonNegativeInt = Annotated[int, Range(ge=0)]
PositiveFloat = Annotated[float, Range(gt=0)]
NonNegativeFloat = Annotated[float, Range(ge=0)]
Fraction = Annotated[float, Range(gt=0, lt=1)]
"""Strictly between 0 and 1."""


@dataclasses.dataclass(frozen=True)
class SpecTerm:
    """One term of a spec: ``name/arg/arg`` (numbers parsed, words kept as text)."""

    name: str
    args: tuple[float | str, ...] = ()

    def __str__(self) -> str:
        return "/".join([self.name, *(f"{a:g}" if isinstance(a, float) else a
                                      for a in self.args)])


def parse_spec(text: str, key: str = "spec") -> tuple[SpecTerm, ...]:
    """``"l2_er/1e-4/1e-2+layernorm"`` -> ``(SpecTerm("l2_er", (1e-4, 1e-2)),
    SpecTerm("layernorm"))``: terms joined by ``+``, arguments by ``/``; an empty term or
    name is a ConfigError naming ``key``."""
    terms = []
    for part in str(text).strip().split("+"):
        name, *args = (piece.strip() for piece in part.split("/"))
        if not name or any(not a for a in args):
            raise ConfigError(f"{key}={text!r}: empty term or argument (expected "
                              "name/arg/...+name/...)")
        terms.append(SpecTerm(name, tuple(_number_or_word(a) for a in args)))
    return tuple(terms)


def _number_or_word(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text
