"""Overhead of `raystudy sweep` over the same trials in a plain Python loop.

Both candidates run the optimizer study's train loop on the same N small configs (one
learning rate each), each in a fresh subprocess, side by side in one invocation. CPU
time is summed over the whole process tree (driver, raylet, GCS, Tune actors), sampled
with psutil, so Ray's start-up and per-trial actor costs are counted.

    .venv/bin/python bench/sweep_overhead.py --trials 20

It runs N and 3N trials, so the fixed cost of starting Ray is told apart from the
cost of each additional trial. Target (issue 2): <= 0.5 CPU-s per trial over the
plain loop. The sweep runs twice, with the optuna-dashboard mirror (the default) and
with ``--optuna-storage off``; the mirror's cost per trial is the difference of the two
per-trial costs (target, issue 13: <= 0.05 CPU-s), cross-checked by driving the mirror
callback alone in this process through the same trials and reports
(``--mirror-only`` runs just that).
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
    from raystudy.contract.context import LocalContext
    from raystudy.platform.configuration.config import apply_overrides
    from raystudy.studies.optimizer_robustness.config import OptimizerRobustnessConfig
    from raystudy.studies.optimizer_robustness.recipe import STUDY

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


def run_pair(n: int, tmp: str) -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds of the plain loop and of `raystudy sweep`, N trials each."""
    space = Path(tmp) / f"space{n}.yaml"
    grid = ", ".join(map(str, lr_grid(n)))
    space.write_text(f"params:\n  optimizer.lr: {{grid: [{grid}]}}\n")
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
    sweep = [sys.executable, "-m", "raystudy", "sweep", "optimizer_robustness",
             "--space", str(space), "--storage", tmp, *sets]
    plain = [sys.executable, __file__, "--plain", "--trials", str(n)]
    return {"plain loop": measure(plain),
            "raystudy sweep": measure([*sweep, "--name", f"bench{n}"]),
            "sweep, no mirror": measure([*sweep, "--name", f"off{n}", "--optuna-storage",
                                         "off"])}


class _Trial:
    """What the mirror reads of a Tune trial."""

    def __init__(self, trial_id: str, lr: float) -> None:
        self.trial_id, self.config, self.last_result = trial_id, {"optimizer.lr": lr}, {}


def mirror_cpu_per_trial(n: int, tmp: str) -> float:
    """CPU seconds per trial of the mirror alone: start, two reports, completion."""
    from raystudy.platform.configuration.spaces import optuna_distributions
    from raystudy.platform.tracking.optuna_mirror import OptunaMirror
    from raystudy.studies.optimizer_robustness.config import OptimizerRobustnessConfig

    grid = {"optimizer.lr": {"grid": lr_grid(n)}}
    mirror = OptunaMirror(f"sqlite:///{tmp}/mirror.db", "bench", "eval/loss", "min",
                          optuna_distributions(grid, OptimizerRobustnessConfig()))
    mirror.setup()
    started = time.process_time()
    for i, lr in enumerate(lr_grid(n)):
        trial = _Trial(f"t{i:05d}", lr)
        mirror.on_trial_start(0, [], trial)
        for step in (1, 2):
            trial.last_result = {"eval/loss": 5.0 / step, "train/loss": 5.0 / step,
                                 "train/step": 10 * step, "training_iteration": step,
                                 "diverged": 0, "done": step == 2}
            mirror.on_trial_result(0, [], trial, trial.last_result)
        mirror.on_trial_complete(0, [], trial)
    return (time.process_time() - started) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--plain", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mirror-only", action="store_true",
                        help="only the optuna-dashboard mirror's own cost, in this process")
    args = parser.parse_args()
    if args.plain:
        plain_loop(args.trials)
        return
    with tempfile.TemporaryDirectory() as tmp:
        direct = mirror_cpu_per_trial(max(args.trials, 60), tmp)
    print(f"optuna-dashboard mirror alone (SQLite, 2 reports per trial): {direct:.4f} CPU-s "
          f"per trial (target <= 0.05): {'PASS' if direct <= 0.05 else 'FAIL'}")
    if args.mirror_only:
        return
    sizes = (args.trials, 3 * args.trials)
    with tempfile.TemporaryDirectory() as tmp:
        table = {n: run_pair(n, tmp) for n in sizes}
    print("trials of the optimizer study's loop (tiny config); sweep: 2 concurrent\n")
    print(f"{'trials':>6s} {'candidate':16s} {'wall s':>8s} {'CPU s':>8s}")
    for n, rows in table.items():
        for name, (wall, cpu) in rows.items():
            print(f"{n:6d} {name:16s} {wall:8.1f} {cpu:8.1f}")
    extra = {n: rows["raystudy sweep"][1] - rows["plain loop"][1] for n, rows in table.items()}
    small, large = sizes
    marginal = (extra[large] - extra[small]) / (large - small)
    fixed = extra[small] - marginal * small
    on = {n: rows["raystudy sweep"][1] for n, rows in table.items()}
    off = {n: rows["sweep, no mirror"][1] for n, rows in table.items()}
    mirror = ((on[large] - on[small]) - (off[large] - off[small])) / (large - small)
    for n, rows in table.items():
        (plain_wall, plain_cpu), (sweep_wall, sweep_cpu), _ = rows.values()
        print(f"\n{n} trials: wall ratio sweep/plain {sweep_wall / plain_wall:.2f}x, "
              f"CPU ratio {sweep_cpu / plain_cpu:.2f}x, "
              f"overhead {extra[n] / n:.2f} CPU-s per trial including Ray start-up")
    verdict = "PASS" if marginal <= 0.5 else "FAIL"
    print(f"\nRay start-up and shutdown: {fixed:.1f} CPU-s once per sweep")
    print(f"overhead per additional trial: {marginal:.2f} CPU-s (target <= 0.5): {verdict}")
    print(f"the mirror's share, sweep with it minus without, per additional trial: "
          f"{mirror:+.3f} CPU-s (noisy end to end; the mirror alone: {direct:.4f})")
    assert math.isfinite(marginal)


if __name__ == "__main__":
    main()
