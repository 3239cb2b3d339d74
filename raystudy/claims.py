"""Claims from the statistics layer's results: the report's ``Claim`` rows, for any study.

A study's ``analyze`` pairs its runs by seed (or groups them by cluster), calls
:mod:`raystudy.algorithms.stats`, and turns each result into a :class:`~raystudy.Claim`
here, so every verdict is read by the same rule: the 95 % interval (90 % for an
equivalence) against the claimed side, at least 3 units, and the test's p-value
(Holm-adjusted inside a family) at or below 0.05::

    from raystudy import claims
    from raystudy.algorithms import stats

    result = stats.paired_comparison(method_by_seed, baseline_by_seed)
    claim = claims.paired_claim("Adam beats SGD", "loss: SGD - Adam", result, "greater")

    family = claims.holm_family([claims.Test(statement, effect, result, "greater"), ...],
                                "3 datasets")

A claim the run cannot test (a method or baseline missing) is ``missing_claim``: the
report shows it as inconclusive with the reason, never leaves it out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from raystudy.algorithms.stats import (
    ClusteredSlope,
    Direction,
    PairedComparison,
    holm,
    verdict,
)
from raystudy.contract.study import Claim

__all__ = ["Test", "equivalence_claim", "holm_family", "missing_claim", "paired_claim",
           "slope_claim"]


def paired_claim(statement: str, effect: str, result: PairedComparison, direction: Direction,
                 note: str = "", p_value: float | None = None, family: str = "",
                 margin: float = 0.0) -> Claim:
    """A claim about a paired per-seed difference (``stats.paired_comparison``, or
    ``stats.non_inferiority`` with its ``margin``); ``p_value`` overrides the raw one (a
    Holm-adjusted p over ``family``, named in the test)."""
    p = result.p_value if p_value is None else float(p_value)
    test = result.test + (f"; Holm-adjusted p over {family}" if family else "")
    return Claim(statement, test, effect, result.mean_difference, result.ci_low,
                 result.ci_high, result.n, verdict(result.ci_low, result.ci_high, direction,
                                                   result.n, p, margin=margin),
                 p_value=p, note=_join(note, _why(result.n, result.unit)))


def equivalence_claim(statement: str, effect: str, result: PairedComparison, margin: float,
                      note: str = "", p_value: float | None = None, family: str = "") -> Claim:
    """A claim that two methods are equivalent within ``margin`` (``stats.equivalence``):
    supported only when the whole 90 % interval lies inside the margins and TOST's p
    reaches 0.05; a wide interval around 0 stays inconclusive."""
    return paired_claim(statement, effect, result, "within", _join(
        note, f"equivalence margin +-{margin:g}"), p_value, family, margin)


def slope_claim(statement: str, effect: str, fit: ClusteredSlope, direction: Direction,
                note: str = "") -> Claim:
    """A claim about the sign of a slope fitted through cluster means."""
    return Claim(statement, fit.test, effect, fit.slope, fit.ci_low, fit.ci_high,
                 fit.clusters, verdict(fit.ci_low, fit.ci_high, direction, fit.clusters,
                                       fit.p_value),
                 p_value=fit.p_value, note=_join(note, _why(fit.clusters, "clusters")))


def missing_claim(statement: str, test: str, effect: str, why: str) -> Claim:
    """The row for a claim this run cannot test at all (a method or baseline missing)."""
    nan = math.nan
    return Claim(statement, test, effect, nan, nan, nan, 0, "inconclusive at this scale",
                 note=why)


@dataclass(frozen=True)
class Test:
    """One member of a family of paired claims (see :func:`holm_family`)."""

    statement: str
    effect: str
    result: PairedComparison
    direction: Direction
    note: str = ""
    margin: float = 0.0
    """Non-inferiority margin (``"greater"``/``"less"``) or equivalence margin
    (``"within"``)."""


def holm_family(tests: Sequence[Test], family: str) -> list[Claim]:
    """Claims of a family of paired tests, each read with its Holm-adjusted p-value
    (``family`` names the family in each claim's test, e.g. ``"4 datasets"``)."""
    adjusted = holm([t.result.p_value for t in tests])
    label = family or f"{len(tests)} tests"
    return [paired_claim(t.statement, t.effect, t.result, t.direction,
                         _join(t.note, f"equivalence margin +-{t.margin:g}")
                         if t.direction == "within" else t.note,
                         p_value=float(p), family=label, margin=t.margin)
            for t, p in zip(tests, adjusted, strict=True)]


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _why(n: int, units: str) -> str:
    if n < 3:
        unit = units.removesuffix("s") if n == 1 else units
        return f"only {n} {unit}: too few for the test, run more for a verdict"
    return ""
