"""Claims from the statistics layer's results: the report's ``Claim`` rows, for any study.

A study's ``analyze`` pairs its runs by seed (or groups them by cluster), calls
:mod:`raystudy.algorithms.stats`, and turns each result into a :class:`~raystudy.Claim`
here, so every verdict is read by the same rule: the 95 % interval (90 % for an
equivalence) against the claimed side, at least 3 units, and the test's p-value
(Holm-adjusted inside a family) at or below 0.05. Before that rule, a reviewer's step:
each claim names its ``preconditions`` (size before power, each arm above chance) and
reads ``"precondition failed"`` when one does not hold, and its ``scope`` (the data,
stand-in or real, and the hardware)::

    from raystudy import claims
    from raystudy.algorithms import stats

    result = stats.paired_comparison(method_by_seed, baseline_by_seed)
    above_chance = claims.Precondition("SGD learns: accuracy above chance (0.1)",
                                       holds=sgd_accuracy > 0.1,
                                       evidence=f"SGD accuracy {sgd_accuracy:.3f}")
    claim = claims.paired_claim("Adam beats SGD", "loss: SGD - Adam", result, "greater",
                                scope="generated digits, CPU", preconditions=[above_chance])

    family = claims.holm_family([claims.Test(statement, effect, result, "greater"), ...],
                                "3 datasets", scope="generated digits, CPU")

A claim the run cannot test (a method or baseline missing) is ``missing_claim``, shown
inconclusive with the reason; a regime the paper claims and the run did not cover is
``not_run``, listed after the tested rows. Neither is ever left out.
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
from raystudy.contract.study import VERDICTS, Claim, Precondition, Verdict

__all__ = ["VERDICTS", "Claim", "Precondition", "Test", "Verdict", "equivalence_claim",
           "gate", "holm_family", "missing_claim", "not_run", "paired_claim", "slope_claim"]


def gate(reading: Verdict, preconditions: Sequence[Precondition], note: str = "",
         ) -> tuple[Verdict, str]:
    """The verdict and note once ``preconditions`` are read: ``"precondition failed"``,
    with each failed one and its evidence in the note, when any does not hold."""
    failed = [p for p in preconditions if not p.holds]
    if not failed:
        return reading, note
    why = "; ".join(f"precondition failed: {p.statement} ({p.evidence})" for p in failed)
    return "precondition failed", _join(why, f"without it the interval reads {reading!r}",
                                        note)


def paired_claim(statement: str, effect: str, result: PairedComparison, direction: Direction,
                 note: str = "", p_value: float | None = None, family: str = "",
                 margin: float = 0.0, *, scope: str,
                 preconditions: Sequence[Precondition] = ()) -> Claim:
    """A claim about a paired per-seed difference (``stats.paired_comparison``, or
    ``stats.non_inferiority`` with its ``margin``); ``p_value`` overrides the raw one (a
    Holm-adjusted p over ``family``, named in the test)."""
    p = result.p_value if p_value is None else float(p_value)
    test = result.test + (f"; Holm-adjusted p over {family}" if family else "")
    reading = verdict(result.ci_low, result.ci_high, direction, result.n, p, margin=margin)
    shown, note = gate(reading, preconditions, _join(note, _why(result.n, result.unit)))
    return Claim(statement, test, effect, result.mean_difference, result.ci_low,
                 result.ci_high, result.n, shown, p_value=p, note=note, scope=scope,
                 preconditions=tuple(preconditions))


def equivalence_claim(statement: str, effect: str, result: PairedComparison, margin: float,
                      note: str = "", p_value: float | None = None, family: str = "", *,
                      scope: str, preconditions: Sequence[Precondition] = ()) -> Claim:
    """A claim that two methods are equivalent within ``margin`` (``stats.equivalence``):
    supported only when the whole 90 % interval lies inside the margins and TOST's p
    reaches 0.05; a wide interval around 0 stays inconclusive."""
    return paired_claim(statement, effect, result, "within", _join(
        note, f"equivalence margin +-{margin:g}"), p_value, family, margin, scope=scope,
        preconditions=preconditions)


def slope_claim(statement: str, effect: str, fit: ClusteredSlope, direction: Direction,
                note: str = "", *, scope: str,
                preconditions: Sequence[Precondition] = ()) -> Claim:
    """A claim about the sign of a slope fitted through cluster means."""
    reading = verdict(fit.ci_low, fit.ci_high, direction, fit.clusters, fit.p_value)
    shown, note = gate(reading, preconditions, _join(note, _why(fit.clusters, "clusters")))
    return Claim(statement, fit.test, effect, fit.slope, fit.ci_low, fit.ci_high,
                 fit.clusters, shown, p_value=fit.p_value, note=note, scope=scope,
                 preconditions=tuple(preconditions))


def missing_claim(statement: str, test: str, effect: str, why: str, *, scope: str) -> Claim:
    """The row for a claim this run cannot test at all (a method or baseline missing)."""
    nan = math.nan
    return Claim(statement, test, effect, nan, nan, nan, 0, "inconclusive at this scale",
                 note=why, scope=scope)


def not_run(statement: str, scope: str, why: str) -> Claim:
    """The row for a regime the paper claims and this run did not cover (CUDA, the
    paper's scale, a real data set not placed): verdict ``"not run"``, listed by the
    report after the tested rows, never left out. ``scope`` names the regime."""
    nan = math.nan
    return Claim(statement, "not run", "-", nan, nan, nan, 0, "not run", note=why,
                 scope=scope)


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
    scope: str = ""
    """This member's scope; empty takes the family's."""
    preconditions: tuple[Precondition, ...] = ()


def holm_family(tests: Sequence[Test], family: str, *, scope: str = "") -> list[Claim]:
    """Claims of a family of paired tests, each read with its Holm-adjusted p-value
    (``family`` names the family in each claim's test, e.g. ``"4 datasets"``). A member
    whose precondition fails keeps its place in the adjustment (the family's size does
    not shrink when a comparison cannot be read); ``scope`` is each member's unless it
    names its own."""
    adjusted = holm([t.result.p_value for t in tests])
    label = family or f"{len(tests)} tests"
    return [paired_claim(t.statement, t.effect, t.result, t.direction,
                         _join(t.note, f"equivalence margin +-{t.margin:g}")
                         if t.direction == "within" else t.note,
                         p_value=float(p), family=label, margin=t.margin,
                         scope=t.scope or scope, preconditions=t.preconditions)
            for t, p in zip(tests, adjusted, strict=True)]


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _why(n: int, units: str) -> str:
    if n < 3:
        unit = units.removesuffix("s") if n == 1 else units
        return f"only {n} {unit}: too few for the test, run more for a verdict"
    return ""
