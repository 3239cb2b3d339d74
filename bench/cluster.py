"""The cluster path against the embedded Ray, side by side in one invocation.

    .venv/bin/python bench/cluster.py --trials 4

Three measurements, each a real `raystudy` process on this machine:

1. Autoscaling from zero: a local cluster shaped like clusters/aws.yaml (a 0-CPU head,
   Ray's fake autoscaler adding 1-CPU nodes, clusters/local-autoscale.yaml) and a sweep
   attached to it: seconds from the sweep's start to its first trial's first result,
   and to the end.
2. Per-trial cost: the same N and 3N tiny trials on the embedded Ray and attached to a
   3-node static cluster (head + 2 workers of 1 CPU); the cost of one more trial is
   (T(3N) - T(N)) / 2N, so start-up is told apart from per-trial overhead.
3. A 2-step `raystudy run`: the embedded Ray's start-up against attaching to an already
   running local cluster (found without --address).

Ratios and differences are printed beside the figures, with the machine they were
measured on. Issue 17 sets no target for them: they say what the cluster path costs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TINY = ("--set", "model.d_model=32", "--set", "model.n_layers=1", "--set", "model.seq_len=32",
        "--set", "train.steps=20", "--set", "train.eval_every=10",
        "--set", "train.eval_batches=2", "--set", "data.max_bytes=200000")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def cluster(*start_args: str, head_cpus: int) -> Iterator[dict[str, str]]:
    """A local cluster on free ports with a token of its own; yields its client env."""
    state = Path(tempfile.mkdtemp(prefix="rs-bench-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16),
               RAYSTUDY_CLUSTER_DIR=str(state), NUM_CPUS=str(head_cpus),
               RAY_PORT=str(free_port()), DASHBOARD_PORT=str(free_port()),
               CLIENT_PORT=str(free_port()), AGENT_PORT=str(free_port()),
               OBJECT_STORE_BYTES=str(200 * 1024**2), RAY_USAGE_STATS_ENABLED="0",
               PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    subprocess.run([str(BIN / "raystudy"), "cluster", "start", *start_args], env=env,
                   check=True, capture_output=True, timeout=300)
    try:
        yield env
    finally:
        subprocess.run([str(BIN / "raystudy"), "cluster", "stop"], env=env,
                       capture_output=True, timeout=120)


def sweep_cmd(out: Path, trials: int, *extra: str) -> list[str]:
    space = out / f"space-{trials}.yaml"
    lrs = ", ".join(f"{10 ** (-4 + 3 * i / max(trials - 1, 1)):.4g}" for i in range(trials))
    space.write_text(f"params:\n  optimizer.lr: {{grid: [{lrs}]}}\n")
    return [str(BIN / "raystudy"), "sweep", "optimizer_robustness", "--space", str(space),
            "--storage", str(out / "runs"), "--optuna-storage", "off", *TINY, *extra]


def timed(cmd: list[str], env: dict[str, str], first_result: Path | None = None
          ) -> tuple[float, float | None]:
    """Wall seconds of ``cmd``; with ``first_result`` (a run folder), also the seconds
    until the first trial's first result is on disk."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    first = None
    while proc.poll() is None:
        if first is None and first_result is not None and any(
                p.stat().st_size for p in first_result.glob("*/result.json")):
            first = time.perf_counter() - started
        time.sleep(0.05)
    if proc.returncode:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n"
                         f"{proc.stderr.read()[-2000:]}")
    return time.perf_counter() - started, first


def embedded_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(RAY_AUTH_MODE="disabled", RAYSTUDY_CLUSTER_DIR="/nonexistent-raystudy-bench",
               RAY_USAGE_STATS_ENABLED="0")
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4, help="N (and 3N) trials per sweep")
    args = parser.parse_args()
    import torch

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, torch {torch.__version__}")
    out = Path(tempfile.mkdtemp(prefix="rs-bench-out-"))
    rows: dict[str, float] = {}

    with cluster("--autoscale", str(REPO / "clusters" / "local-autoscale.yaml"),
                 head_cpus=0) as env:
        run = out / "runs"
        total, first = timed(sweep_cmd(out, args.trials, "--name", "autoscale",
                                       "--address", env_address(env)), env, run / "autoscale")
        rows["autoscale: sweep start -> first result (s)"] = first or float("nan")
        rows[f"autoscale: {args.trials}-trial sweep from zero nodes (s)"] = total

    n, n3 = args.trials, 3 * args.trials
    emb = [timed(sweep_cmd(out, k, "--name", f"emb{k}"), embedded_env())[0] for k in (n, n3)]
    with cluster("--workers", "2", head_cpus=1) as env:
        clu = [timed(sweep_cmd(out, k, "--name", f"clu{k}", "--address", env_address(env)),
                     env)[0] for k in (n, n3)]
        run_cmd = [str(BIN / "raystudy"), "run", "optimizer_robustness", "--storage",
                   str(out / "runs"), "--optuna-storage", "off", *TINY,
                   "--set", "train.steps=2", "--set", "train.eval_every=1"]
        attached = timed(run_cmd, env)[0]  # no --address: the running cluster is found
    cold = timed(run_cmd, embedded_env())[0]
    per_emb, per_clu = (emb[1] - emb[0]) / (n3 - n), (clu[1] - clu[0]) / (n3 - n)
    rows[f"embedded Ray: {n} / {n3} trials (s)"] = emb[0]
    rows[f"3-node cluster: {n} / {n3} trials (s)"] = clu[0]
    rows["per trial, embedded Ray (s)"] = per_emb
    rows["per trial, 3-node cluster (s)"] = per_clu
    rows["2-step run, embedded Ray start (s)"] = cold
    rows["2-step run, attached to a running cluster (s)"] = attached

    width = max(map(len, rows))
    for name, value in rows.items():
        print(f"{name:{width}s} {value:8.2f}")
    print(f"{'':{width}s} (3N sweeps: embedded {emb[1]:.2f} s, cluster {clu[1]:.2f} s)")
    print(f"per trial, cluster - embedded: {per_clu - per_emb:+.2f} s")
    print(f"{n3}-trial sweep, cluster / embedded: {clu[1] / emb[1]:.2f}x")
    print(f"2-step run, embedded start / attached: {cold / attached:.2f}x")
    (out / "bench.json").write_text(json.dumps(rows, indent=2))
    print(f"figures in {out / 'bench.json'}")


def env_address(env: dict[str, str]) -> str:
    return f"127.0.0.1:{env['RAY_PORT']}"


if __name__ == "__main__":
    main()
