"""From the statistics layer's results to the report's ``Claim`` rows, for every study.

Each study's ``analyze`` pairs its runs by seed (or groups them by cluster), calls
:mod:`raystudy.algorithms.stats`, and turns the result into a :class:`~raystudy.Claim`
here, so every verdict is read by the same rule: the 95 % interval against the claimed
side of 0, at least 3 units, and the test's p-value (Holm-adjusted inside a family) at
or below 0.05.
"""

from __future__ import annotations

from raystudy import Claim
from raystudy.algorithms.stats import ClusteredSlope, Direction, PairedComparison, verdict


def paired_claim(statement: str, effect: str, result: PairedComparison, direction: Direction,
                 note: str = "", p_value: float | None = None, family: str = "") -> Claim:
    """A claim about a paired per-seed difference; ``p_value`` overrides the raw one
    (a Holm-adjusted p over ``family``, named in the test)."""
    p = result.p_value if p_value is None else float(p_value)
    test = result.test + (f"; Holm-adjusted p over {family}" if family else "")
    return Claim(statement, test, effect, result.mean_difference, result.ci_low,
                 result.ci_high, result.n, verdict(result.ci_low, result.ci_high, direction,
                                                   result.n, p),
                 p_value=p, note=_join(note, _why(result.n, "seeds")))


def slope_claim(statement: str, effect: str, fit: ClusteredSlope, direction: Direction,
                note: str = "") -> Claim:
    """A claim about the sign of a slope fitted through cluster means."""
    return Claim(statement, fit.test, effect, fit.slope, fit.ci_low, fit.ci_high,
                 fit.clusters, verdict(fit.ci_low, fit.ci_high, direction, fit.clusters,
                                       fit.p_value),
                 p_value=fit.p_value, note=_join(note, _why(fit.clusters, "clusters")))


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _why(n: int, units: str) -> str:
    if n < 3:
        unit = units.removesuffix("s") if n == 1 else units
        return f"only {n} {unit}: too few for the test, run more for a verdict"
    return ""


def missing_claim(statement: str, test: str, effect: str, why: str) -> Claim:
    """The row for a claim this run cannot test at all (a method or baseline missing)."""
    nan = float("nan")
    return Claim(statement, test, effect, nan, nan, nan, 0, "inconclusive at this scale",
                 note=why)
