"""Divergence marking and the local context."""

from __future__ import annotations

import math

import pytest

from raystudy.platform.context import LocalContext, TrialDiverged, mark_divergence
from raystudy.platform.study import Metric

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
