"""Divergence marking and the local context."""

from __future__ import annotations

import math

import pytest

from raystudy.contract.context import STEP_KEY, LocalContext, TrialDiverged, mark_divergence
from raystudy.contract.study import Metric

METRICS = (Metric("eval/loss", "min"), Metric("eval/accuracy", "max"))


def test_mark_divergence_makes_declared_metrics_worst():
    marked, diverged = mark_divergence(
        {"eval/loss": math.nan, "eval/accuracy": math.inf, "other": math.nan}, METRICS)
    assert diverged and marked["diverged"] == 1
    assert marked["eval/loss"] == math.inf and marked["eval/accuracy"] == -math.inf
    assert math.isnan(marked["other"])  # undeclared keys are left alone
    marked, diverged = mark_divergence({"eval/loss": 1.0, "step": 3}, METRICS)
    assert not diverged and marked == {"eval/loss": 1.0, "step": 3.0, "diverged": 0}


def test_local_context_report_and_divergence_stop():
    ctx = LocalContext(METRICS)
    ctx.report({"eval/loss": 2.0}, checkpoint={"step": 1})
    assert ctx.last_checkpoint == {"step": 1}
    with pytest.raises(TrialDiverged):
        ctx.report({"eval/loss": math.inf}, checkpoint={"step": 2})
    assert ctx.last_checkpoint == {"step": 1}  # no checkpoint of a diverged state
    assert [r["diverged"] for r in ctx.reports] == [0, 1]


# ---------------------------------------------------------------- cadence, map_chunks, sums
def test_cadence_ticks_and_one_meaning_for_zero():
    from raystudy.contract.context import StepCadence

    c = StepCadence(total=10, eval_every=3, checkpoint_every=2)
    assert list(c) == list(range(1, 11))
    assert [s for s in c if c.evaluates(s)] == [3, 6, 9, 10]  # every 3 steps, and the last
    assert [s for s in c if c.checkpoints(s)] == [6, 10]  # every 2nd evaluation, and the last
    only_last = StepCadence(total=5, eval_every=0, checkpoint_every=0)
    assert [s for s in only_last if only_last.evaluates(s)] == [5]
    assert [s for s in only_last if only_last.checkpoints(s)] == [5]
    assert [s for s in StepCadence(4, 1, 0) if StepCadence(4, 1, 0).checkpoints(s)] == [4]
    assert list(StepCadence(10, 3, 2, start=6)) == [7, 8, 9, 10]
    with pytest.raises(ValueError):
        StepCadence(total=5, eval_every=-1)


def _loop(ctx: LocalContext, stop_after: int | None = None) -> list[int]:
    """A loop on the cadence that records its steps; it may 'crash' after a step."""
    cadence = ctx.cadence(8, eval_every=2, checkpoint_every=2)
    state = ctx.load_checkpoint() or {"seen": []}
    seen = list(state["seen"])
    for step in cadence:
        seen.append(step)
        if cadence.evaluates(step):
            ckpt = {"seen": seen} if cadence.checkpoints(step) else None
            ctx.report({"eval/loss": float(step)}, checkpoint=ckpt, step=step)
        if step == stop_after:
            raise RuntimeError("node lost")
    return seen


def test_cadence_resumes_after_the_checkpointed_step_without_redoing_work():
    first = LocalContext(METRICS)
    with pytest.raises(RuntimeError):
        _loop(first, stop_after=7)  # checkpoints at steps 4 (2nd eval); step 8 never came
    assert [r["eval/loss"] for r in first.reports] == [2, 4, 6]
    resumed = LocalContext(METRICS, checkpoint=first.last_checkpoint)
    assert resumed.cadence(8, 2, 2).start == 4
    assert _loop(resumed) == list(range(1, 9))  # steps 5.. again, none lost, none twice
    assert resumed.load_checkpoint() == {"seen": [1, 2, 3, 4]}  # the step key is the
    # platform's own: the study sees only its state
    assert resumed.last_checkpoint == {"seen": list(range(1, 9)), STEP_KEY: 8}


def test_map_chunks_is_one_call_per_slot_in_order():
    from raystudy.contract.context import chunks

    assert chunks(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert chunks([1], 4) == [[1]]
    calls: list[list[int]] = []

    def square_all(part: list[int]) -> list[int]:
        calls.append(part)
        return [v * v for v in part]

    ctx = LocalContext(METRICS, map_tasks=3)  # no Ray here: the 3 chunks run in-process
    assert ctx.slots == 3
    assert ctx.map_chunks(square_all, range(7)) == [v * v for v in range(7)]
    assert calls == [[0, 1, 2], [3, 4], [5, 6]]
    assert LocalContext(METRICS).slots == 1
    assert LocalContext(METRICS).map_chunks(square_all, []) == []


def test_sums_and_means_are_identities_in_one_process():
    ctx = LocalContext(METRICS)
    assert ctx.all_reduce_sum(3.5) == 3.5 and ctx.all_reduce_mean(3.5) == 3.5


def test_the_public_contract_is_one_import():
    import raystudy
    from raystudy import Analysis, Metric, Study, Table, TrialContext
    from raystudy import LocalContext as Local

    assert Local is LocalContext
    assert {"report", "cadence", "map_chunks", "all_reduce_sum"} <= set(dir(TrialContext))
    assert {"Analysis", "LocalContext", "Metric", "Study", "Table", "TrialContext",
            "RunResults"} <= set(raystudy.__all__)
    assert Analysis and Metric and Study and Table
