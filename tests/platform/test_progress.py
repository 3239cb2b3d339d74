"""The progress view's numbers and the driver log's routing, without Ray."""

from __future__ import annotations

import io
import logging
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from raystudy.platform.execution import progress, progress_view
from raystudy.platform.execution.progress import closing_line, driver_log
from raystudy.platform.execution.progress_view import ProgressView


@dataclass
class FakeTrial:
    """The attributes of a Tune Trial the view reads."""

    trial_id: str
    status: str
    last_result: dict[str, Any] = field(default_factory=dict)
    evaluated_params: dict[str, Any] = field(default_factory=dict)
    start_time: float | None = None


def trials() -> list[FakeTrial]:
    now = time.time()
    return [
        FakeTrial("a", "TERMINATED", {"eval/loss": 2.0, "time_total_s": 10.0}, {"lr": 0.1}),
        FakeTrial("b", "TERMINATED", {"eval/loss": 1.5, "time_total_s": 30.0}, {"lr": 0.01}),
        FakeTrial("c", "TERMINATED", {"eval/loss": math.inf, "diverged": 1,
                                      "time_total_s": 2.0}, {"lr": 10.0}),
        FakeTrial("d", "ERROR", {}, {"lr": 1.0}),
        FakeTrial("e", "RUNNING", {"eval/loss": 0.5, "progress/step": 40,
                                   "progress/total": 100}, {"lr": 0.001}, start_time=now - 5),
        FakeTrial("f", "PENDING"),
    ]


def test_counts_best_and_remaining_time():
    view = ProgressView(total=8, metric="eval/loss", mode="min")
    found = trials()
    counts = view.counts(found)
    assert counts == {"finished": 2, "diverged": 1, "failed": 1, "running": 1, "pending": 3}
    assert view.best(found) == (0.5, {"lr": 0.001})  # the running trial's last value
    assert ProgressView(8, "eval/loss", "max").best(found) == (2.0, {"lr": 0.1})
    # mean finished duration 14 s: 3 pending x 14 + the running one's ~9 s left, one slot
    assert view.remaining_s(found, counts) == pytest.approx(3 * 14 + 9, abs=1.0)
    text, done = view.line(found)
    assert done == 4
    assert text.startswith("4/8 done, 1 running, 3 pending, 1 failed, 1 diverged; "
                           "best eval/loss 0.5 (lr=0.001); 0:0")
    assert text.endswith("; trial e: step 40/100")  # a lone running trial's own progress
    closing = view.summary(found, wall_s=75)
    assert closing == ("raystudy: 8 trial(s): 2 finished, 1 failed, 1 diverged, 4 unfinished; "
                       "best eval/loss 0.5 (lr=0.001); wall time 1:15")


def test_the_view_pickles_without_its_screen_and_finds_the_current_one(tmp_path):
    import pickle

    view = ProgressView(total=3, metric="eval/loss", mode="min")
    copy = pickle.loads(pickle.dumps(view))
    assert (copy.total, copy.metric, copy.mode) == (3, "eval/loss", "min")
    with driver_log(verbose=False):
        assert copy.screen is not None  # a driver log is open: Tune's copy draws on it
    assert copy.screen is None  # no driver log open: the view draws nothing
    copy.on_step_end(0, trials())  # and does not fail
    assert closing_line(1.0).startswith("raystudy: 3 trial(s): 2 finished")


def test_driver_log_keeps_raystudy_lines_on_the_terminal_and_everything_in_the_log(
        tmp_path, monkeypatch):
    terminal, errors = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setattr(sys, "stderr", errors)
    logger = logging.getLogger("fake_ray")
    handler = logging.StreamHandler(errors)  # as Ray's logger holds the stderr of its start
    logger.addHandler(handler)
    try:
        log = tmp_path / "logs" / "driver.log"
        with driver_log(verbose=False) as routed:
            print("Started a local Ray instance.")  # before the run folder exists
            routed.attach(log)
            print("== Status ==\nTrial status: 3 RUNNING")
            print("raystudy: waiting for nodes")
            print("raystudy: warning: the mirror stopped", file=sys.stderr)
            logger.warning("Trial task failed")
            sys.stdout.write("no newline at the end")
        assert sys.stdout is terminal and handler.stream is errors  # all put back
        assert terminal.getvalue() == "raystudy: waiting for nodes\n"
        assert errors.getvalue() == "raystudy: warning: the mirror stopped\n"
        text = log.read_text()
        for line in ("Started a local Ray instance.", "Trial status: 3 RUNNING",
                     "raystudy: waiting for nodes",
                     "Trial task failed", "no newline at the end\n"):
            assert line in text
        with driver_log(verbose=True) as routed:
            routed.attach(log)
            print("Trial status: 4 RUNNING")
            logger.warning("another warning")
        assert "Trial status: 4 RUNNING\n" in terminal.getvalue()
        assert "another warning" in terminal.getvalue() + errors.getvalue()
        assert log.read_text().count("Trial status") == 2  # appended, never overwritten
    finally:
        logger.removeHandler(handler)


def test_a_terminal_gets_one_live_line_that_plain_lines_pass_above(tmp_path, monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Tty()
    monkeypatch.setattr(sys, "stdout", terminal)
    with driver_log(verbose=False) as routed:
        routed.attach(tmp_path / "driver.log")
        assert routed.screen.live
        view = ProgressView(total=8, metric="eval/loss", mode="min")
        view.on_step_end(0, trials())
        print("raystudy: trial d failed")
        view.on_step_end(1, trials())
    shown = terminal.getvalue()
    assert "4/8 done" in shown and "raystudy: trial d failed\n" in shown
    assert "\r" in shown  # redrawn in place, not a new line per update
    assert progress.ACTIVE["screen"] is None


def test_what_ray_said_before_a_failure_is_not_lost(monkeypatch):
    terminal, errors = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setattr(sys, "stderr", errors)
    with pytest.raises(RuntimeError), driver_log(verbose=False):
        print("raystudy: sweep x (3 trials)")
        print("Could not connect to GCS at 10.0.0.1:6379", file=sys.stderr)
        raise RuntimeError("no cluster")
    assert terminal.getvalue() == "raystudy: sweep x (3 trials)\n"
    assert errors.getvalue() == "Could not connect to GCS at 10.0.0.1:6379\n"


def test_parameters_are_named_by_their_last_part_where_that_is_unambiguous():
    assert progress_view._params({"optimizer.lr": 0.01, "optimizer.name": "adamw"}) == (
        "lr=0.01, name=adamw")
    assert progress_view._params({"a.seed": 1, "b.seed": 2, "c.x": 3}) == "a.seed=1, b.seed=2, x=3"
