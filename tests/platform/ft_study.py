"""A tiny test-only study for the fault-tolerance tests: counts steps, checkpoints each
one, and can kill its own process once (``kill_at`` + a one-shot marker) or raise.

Registered only by ``ft_cli.py`` (never shipped): the tests run the real CLI with it.
Each step appends ``<tag> <step> <pid> <node id>`` to ``<log_dir>/steps.log`` so a test can see
which process ran which step, and each trial writes ``done-<tag>`` when it ends.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from raystudy import Metric, Study, TrialContext


@dataclass
class FaultConfig:
    steps: int = 4
    """Steps (one report and one checkpoint each)."""
    sleep_s: float = 0.2
    """Seconds per step."""
    tag: int = 0
    """Trial label, swept by the tests."""
    kill_at: int = 0
    """After reporting this step, SIGKILL the own process once (0: never)."""
    fail_tag: int = -1
    """The trial with this tag raises at its last step (-1: none)."""
    nan_tag: int = -1
    """The trial with this tag reports a NaN loss at its last step (diverges; -1: none)."""
    log_dir: str = ""
    """Folder for steps.log, done-<tag> and the kill marker."""

    def validate(self) -> None:
        if self.steps < 1:
            raise ValueError("steps must be >= 1")


def train_loop(config: FaultConfig, ctx: TrialContext) -> None:
    log = Path(config.log_dir)
    state = ctx.load_checkpoint() or {"step": 0}
    for step in range(state["step"] + 1, config.steps + 1):
        time.sleep(config.sleep_s)
        if config.tag == config.fail_tag and step == config.steps:
            raise RuntimeError(f"trial {config.tag} failed on purpose at step {step}")
        with open(log / "steps.log", "a") as f:
            f.write(f"{config.tag} {step} {os.getpid()} {ctx.node_id}\n")
        loss = float("nan") if config.tag == config.nan_tag and step == config.steps else 1 / step
        ctx.report({"train/loss": loss, "train/step": step, "worker_pid": os.getpid()},
                   checkpoint={"step": step})
        marker = log / "killed"
        if step == config.kill_at and not marker.exists():
            marker.write_text(str(os.getpid()))
            time.sleep(2.0)  # let the controller register the checkpoint first
            os.kill(os.getpid(), signal.SIGKILL)
    (log / f"done-{config.tag}").write_text(str(os.getpid()))


STUDY = Study(
    name="fault_test",
    description="test-only study for fault tolerance",
    config_cls=FaultConfig,
    train_loop=train_loop,
    metrics=(Metric("train/loss", "min", "1/step"),),
)
