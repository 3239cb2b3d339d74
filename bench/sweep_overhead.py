"""Overhead of `raystudy sweep` over the same trials in a plain Python loop.

Both candidates run the optimizer study's train loop on the same N small configs (one
learning rate each), each in a fresh subprocess, side by side in one invocation. CPU
time is summed over the whole process tree (driver, raylet, GCS, Tune actors), sampled
with psutil, so Ray's start-up and per-trial actor costs are counted.

    .venv/bin/python bench/sweep_overhead.py --trials 20

Target (issue 2): <= 0.5 CPU-s per trial over the plain loop.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

TINY = {"model.d_model": "32", "model.n_layers": "1", "model.seq_len": "32",
        "train.steps": "20", "train.eval_every": "10", "train.eval_batches": "2",
        "data.max_bytes": "200000", "optimizer.name": "adamw"}


def lr_grid(n: int) -> list[float]:
    return [float(f"{10 ** (-4 + 3 * i / max(n - 1, 1)):.4g}") for i in range(n)]


def plain_loop(n: int) -> None:
    """The same trials, one after another, with no Ray at all."""
    from raystudy.platform.config import apply_overrides
    from raystudy.platform.context import LocalContext
    from raystudy.studies.optimizer_robustness import STUDY, OptimizerRobustnessConfig

    for lr in lr_grid(n):
        config = apply_overrides(OptimizerRobustnessConfig(), {**TINY, "optimizer.lr": lr})
        STUDY.train_loop(config, LocalContext(STUDY.metrics))


def measure(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds of ``cmd`` and every process it spawns."""
    started = time.perf_counter()
    proc = psutil.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cpu_by_pid: dict[int, float] = {}
    while proc.poll() is None:
        try:
            tree = [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in tree:
            try:
                times = p.cpu_times()
                cpu_by_pid[p.pid] = times.user + times.system
            except psutil.Error:
                continue
        time.sleep(0.1)
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}")
    return time.perf_counter() - started, sum(cpu_by_pid.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--plain", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain:
        plain_loop(args.trials)
        return
    with tempfile.TemporaryDirectory() as tmp:
        space = Path(tmp) / "space.yaml"
        grid = ", ".join(map(str, lr_grid(args.trials)))
        space.write_text(f"params:\n  optimizer.lr: {{grid: [{grid}]}}\n")
        sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
        sweep = [sys.executable, "-m", "raystudy", "sweep", "optimizer_robustness",
                 "--space", str(space), "--storage", tmp, *sets]
        plain = [sys.executable, __file__, "--plain", "--trials", str(args.trials)]
        rows = {"plain loop": measure(plain), "raystudy sweep": measure(sweep)}
    (plain_wall, plain_cpu), (sweep_wall, sweep_cpu) = rows.values()
    print(f"{args.trials} trials of the optimizer study's loop (tiny config), 2 concurrent max\n")
    print(f"{'candidate':16s} {'wall s':>8s} {'CPU s':>8s}")
    for name, (wall, cpu) in rows.items():
        print(f"{name:16s} {wall:8.1f} {cpu:8.1f}")
    per_trial = (sweep_cpu - plain_cpu) / args.trials
    print(f"\nwall ratio sweep/plain: {sweep_wall / plain_wall:.2f}x")
    print(f"CPU ratio sweep/plain:  {sweep_cpu / plain_cpu:.2f}x")
    verdict = "PASS" if per_trial <= 0.5 else "FAIL"
    print(f"overhead per trial: {per_trial:.2f} CPU-s (target <= 0.5): {verdict}")
    assert math.isfinite(per_trial)


if __name__ == "__main__":
    main()
