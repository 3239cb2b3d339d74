"""Wall time of a 2-step `raystudy run`: in this process (`--in-process`) vs embedded Ray.

Both candidates are the real command line, each a fresh subprocess (so every import and
Ray's start are counted), run interleaved ``--reps`` times in one invocation on the same
2-step config; the median wall time of each, their ratio and the hardware are printed.

    .venv/bin/python bench/startup.py --reps 3

Targets (issue 26): in-process <= 0.3x the embedded-Ray run's wall time, and under 5 s
on the 2-core machine (the second applies to 2-core machines only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _hardware import cpu_model, verdict  # noqa: E402

RAYSTUDY = str(Path(sys.executable).parent / "raystudy")
TWO_STEPS = ["--set", "train.steps=2", "--set", "train.eval_every=1"]  # defaults otherwise


def one_run(storage: str, name: str, in_process: bool, study: str) -> float:
    """Seconds of one `raystudy run` from start to exit (it must succeed)."""
    argv = [RAYSTUDY, "run", study, *TWO_STEPS, "--storage", storage, "--name", name,
            "--address", "local"]
    if in_process:
        argv = [a for a in argv if a not in ("--address", "local")] + ["--in-process"]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--study", default="optimizer_robustness")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    print(f"ran on: {cpu_model()}, {cores} cores; study {args.study}, 2 steps, "
          f"{args.reps} interleaved runs each")
    walls: dict[str, list[float]] = {"in-process": [], "embedded Ray": []}
    with tempfile.TemporaryDirectory(prefix="rs-startup-") as storage:
        for rep in range(args.reps):
            for label in walls:
                walls[label].append(one_run(storage, f"{label[:2]}{rep}", label == "in-process",
                                            args.study))
    median = {label: statistics.median(values) for label, values in walls.items()}
    for label, values in walls.items():
        print(f"  {label:13s} median {median[label]:6.2f} s  (runs: "
              f"{', '.join(f'{v:.2f}' for v in values)})")
    ratio = median["in-process"] / median["embedded Ray"]
    print(f"  ratio in-process / embedded Ray: {ratio:.2f}x")
    print(f"target in-process <= 0.3x embedded Ray: {verdict(True, ratio <= 0.3)} ({ratio:.2f}x)")
    print(f"target in-process < 5 s on 2 cores: {verdict(cores == 2, median['in-process'] < 5)} "
          f"({median['in-process']:.2f} s)")


if __name__ == "__main__":
    main()
