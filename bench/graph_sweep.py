"""The graph_transfer quick sweep through Ray Tune on 2 CPUs vs the same trials serially.

Both candidates run the study's own train loop on the same grid of the ``quick``
profile (a shipped space, ``default`` unless ``--space``), each in a fresh
subprocess, side by side in one invocation:

* **serial**: one process, one torch thread, every trial after the other with a
  ``LocalContext`` (no Ray at all);
* **sweep**: ``raystudy sweep graph_transfer --profile quick`` on an embedded Ray with
  2 CPUs (2 concurrent trials, actors reused).

Wall time gives the speed-up (target >= 1.6x on 2 CPUs); CPU time summed over the
whole process tree (driver, raylet, GCS, workers; sampled with psutil, as in
``sweep_overhead.py``) gives the platform's overhead per trial in CPU-seconds.

    flock /tmp/raystudy-ray.lock .venv/bin/python bench/graph_sweep.py           # 300 trials
    flock /tmp/raystudy-ray.lock .venv/bin/python bench/graph_sweep.py --quick   # 24 trials
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from sweep_overhead import measure

QUICK_SPACE = """params:
  data.dataset: {grid: [csbm-h0.1, csbm-h0.9]}
  model.backbone: {grid: [gcn, sage, gps]}
  transfer.mechanism: {grid: [nc, lp, warm_nc_lp, joint_uw]}
  train.seed: 0
"""


def grid(space: str) -> list[dict]:
    """Every point of a space's grid, as dotted overrides (plain values fixed)."""
    from raystudy.platform.configuration.spaces import load_space

    params = load_space("graph_transfer", space)
    keys, values = [], []
    for key, spec in params.items():
        keys.append(key)
        values.append(spec["grid"] if isinstance(spec, dict) else [spec])
    return [dict(zip(keys, point, strict=True)) for point in itertools.product(*values)]


def serial(space: str) -> None:
    """The sweep's trials one after another in this process, no Ray."""
    import torch

    from raystudy.contract.context import LocalContext
    from raystudy.platform.configuration.config import apply_overrides, load_config
    from raystudy.studies.graph_transfer.recipe import STUDY

    torch.set_num_threads(1)
    base = load_config(STUDY.config_cls, "graph_transfer", "quick")
    for point in grid(space):
        STUDY.train_loop(apply_overrides(base, point), LocalContext(STUDY.metrics))


def cpu_name() -> str:
    """The CPU's model name (Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default="default", help="a shipped space or a YAML file")
    parser.add_argument("--quick", action="store_true", help="24 small trials instead")
    parser.add_argument("--serial", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serial:
        serial(args.space)
        return
    with tempfile.TemporaryDirectory() as tmp:
        space = args.space
        if args.quick:
            space = str(Path(tmp) / "bench_space.yaml")
            Path(space).write_text(QUICK_SPACE)
        trials = len(grid(space))
        serial_cmd = [sys.executable, __file__, "--serial", "--space", space]
        sweep_cmd = [sys.executable, "-m", "raystudy", "sweep", "graph_transfer", "--profile",
                     "quick", "--space", space, "--storage", tmp, "--name", "bench"]
        started = time.strftime("%Y-%m-%d %H:%M")
        results = {"serial (1 process)": measure(serial_cmd),
                   "raystudy sweep (2 CPUs)": measure(sweep_cmd)}
    (serial_wall, serial_cpu), (sweep_wall, sweep_cpu) = results.values()
    print(f"graph_transfer quick profile, space {args.space}{' (--quick)' if args.quick else ''}"
          f": {trials} trials; {started}")
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs, "
          f"python {platform.python_version()}, torch threads 1 per trial\n")
    print(f"{'candidate':26s} {'wall s':>8s} {'CPU s':>8s}")
    for name, (wall, cpu) in results.items():
        print(f"{name:26s} {wall:8.1f} {cpu:8.1f}")
    speedup = serial_wall / sweep_wall
    overhead = (sweep_cpu - serial_cpu) / trials
    verdict = "PASS" if speedup >= 1.6 else "FAIL"
    print(f"\nspeed-up serial/sweep: {speedup:.2f}x (target >= 1.6x): {verdict}")
    print(f"platform overhead: {overhead:.2f} CPU-s per trial "
          f"(sweep CPU minus serial CPU, Ray start-up included, over {trials} trials)")


if __name__ == "__main__":
    main()
