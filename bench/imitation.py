"""DualCOIL's price and evaluation fan-out, measured side by side in one process.

1. Gradient steps per second of DualCOIL and of BC on the same minibatches (the price
   of DualCOIL's critic, value and discriminator networks). Both learners get the same
   pre-drawn batches; repetitions interleave the two; medians are reported. DualCOIL's
   discriminator pre-training step is timed as a third row.
2. Wall time of ``--episodes`` deterministic evaluation episodes run through ``ctx.map``
   over 2 Ray tasks against the same episodes run serially in the process (target: the
   parallel run takes <= 0.65x the serial one). The script starts Ray itself
   (``ray.init(num_cpus=2)``) and calls ``TuneContext(map_tasks=2).map`` from the driver,
   which sends the two seed groups to two Ray tasks; a first untimed pass starts the
   workers, so worker start-up is reported apart.

    flock /tmp/raystudy-ray.lock .venv/bin/python bench/imitation.py [--quick]
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import sys
import time

import numpy as np
import torch


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be >= 1")
    return value


def random_batch(rng: np.random.Generator, n: int, obs_dim: int, act_dim: int) -> dict:
    def part() -> dict:
        return {"observations": torch.as_tensor(rng.normal(size=(n, obs_dim)), dtype=torch.float32),
                "actions": torch.as_tensor(rng.uniform(-1, 1, (n, act_dim)), dtype=torch.float32),
                "rewards": torch.zeros(n),
                "next_observations": torch.as_tensor(rng.normal(size=(n, obs_dim)),
                                                     dtype=torch.float32),
                "terminals": torch.zeros(n)}

    batch = {name: part() for name in ("good", "bad", "unlabeled")}
    batch["all"] = batch["unlabeled"]
    batch["initial"] = batch["unlabeled"]["observations"]
    return batch


def time_updates(learner, batches: list[dict]) -> float:
    start = time.perf_counter()
    for batch in batches:
        learner.update(batch)
    return (time.perf_counter() - start) / len(batches)


def bench_steps(args: argparse.Namespace) -> None:
    from raystudy.algorithms.imitation.bc import BC, BCConfig
    from raystudy.algorithms.imitation.dualcoil import DualCOIL, DualCOILConfig

    hidden = (args.hidden,) * 2
    rng = np.random.default_rng(0)
    batches = [random_batch(rng, args.batch_size, args.obs_dim, args.act_dim)
               for _ in range(args.steps)]
    learners = {
        "BC (1 policy)": BC(args.obs_dim, args.act_dim, "all", BCConfig(hidden=hidden)),
        "DualCOIL discriminators (pre-training)": DualCOIL(
            args.obs_dim, args.act_dim, DualCOILConfig(hidden=hidden, pretrain_steps=10**9)),
        "DualCOIL (policy, 2 Q, V, targets)": DualCOIL(
            args.obs_dim, args.act_dim, DualCOILConfig(hidden=hidden, pretrain_steps=0)),
    }
    for learner in learners.values():  # warm-up: allocator, first-call overheads
        time_updates(learner, batches[:5])
    times: dict[str, list[float]] = {name: [] for name in learners}
    for _ in range(args.reps):
        for name, learner in learners.items():
            times[name].append(time_updates(learner, batches))
    base = statistics.median(times["BC (1 policy)"])
    print(f"\n## gradient steps/s (batch {args.batch_size} per source, hidden {hidden}, "
          f"obs {args.obs_dim}, act {args.act_dim}, {args.steps} steps x {args.reps} reps)\n")
    print(f"| {'learner':40s} | ms/step | steps/s | x BC time |")
    print(f"|{'-' * 42}|--------:|--------:|----------:|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name:40s} | {1e3 * median:7.2f} | {1 / median:7.1f} | {median / base:9.2f} |")


def bench_eval(args: argparse.Namespace) -> None:
    import ray

    from raystudy.algorithms.imitation.dualcoil import DualCOIL, DualCOILConfig
    from raystudy.algorithms.imitation.nets import EnvPolicy
    from raystudy.algorithms.imitation.rollouts import (
        EvalItem,
        evaluate_episodes,
        make_env,
        split_seeds,
    )
    from raystudy.contract.context import map_local
    from raystudy.platform.execution.contexts import TuneContext

    env = make_env(args.env)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    hidden = (args.hidden,) * 2
    learner = DualCOIL(obs_dim, act_dim, DualCOILConfig(hidden=hidden, pretrain_steps=0))
    make = functools.partial(EnvPolicy, learner.actor.state_dict(), obs_dim, act_dim, hidden,
                             np.zeros(obs_dim), np.ones(obs_dim), env.action_space.low,
                             env.action_space.high)
    seeds = list(range(900_000, 900_000 + args.episodes))
    groups = [EvalItem(args.env, g, make) for g in split_seeds(seeds, 2)]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        ctx = TuneContext(map_tasks=2)
        started = time.perf_counter()
        ctx.map(evaluate_episodes, groups)  # starts the two workers
        startup = time.perf_counter() - started
        serial, parallel = [], []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            one = [r for part in map_local(evaluate_episodes, groups) for r in part]
            serial.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            two = [r for part in ctx.map(evaluate_episodes, groups) for r in part]
            parallel.append(time.perf_counter() - t0)
            assert one == two, "parallel and serial evaluation disagree"
    finally:
        ray.shutdown()
    s, p = statistics.median(serial), statistics.median(parallel)
    print(f"\n## {args.episodes} evaluation episodes of {args.env} ({args.reps} reps, medians)\n")
    print("| how | wall s | x serial |\n|---|---:|---:|")
    print(f"| serial, in the process | {s:.3f} | 1.00 |")
    print(f"| ctx.map over 2 Ray tasks | {p:.3f} | {p / s:.2f} |")
    print(f"| (first call, starting the workers) | {startup:.3f} | {startup / s:.2f} |")
    verdict = "PASS" if p / s <= 0.65 else "FAIL"
    print(f"\n{verdict} ctx.map over 2 tasks: {p / s:.2f}x the serial time (target <= 0.65x)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and repetitions")
    parser.add_argument("--steps", type=positive, default=50, help="updates per repetition")
    parser.add_argument("--reps", type=positive, default=5)
    parser.add_argument("--batch-size", type=positive, default=256)
    parser.add_argument("--hidden", type=positive, default=256)
    parser.add_argument("--obs-dim", type=positive, default=11, help="default: Hopper's 11")
    parser.add_argument("--act-dim", type=positive, default=3, help="default: Hopper's 3")
    parser.add_argument("--env", default="Pendulum-v1", help="evaluation environment")
    parser.add_argument("--episodes", type=positive, default=20)
    parser.add_argument("--threads", type=positive, default=1, help="torch threads")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.reps = min(args.steps, 20), min(args.reps, 3)
    torch.set_num_threads(args.threads)
    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"torch {torch.__version__} with {torch.get_num_threads()} thread(s), "
          f"python {platform.python_version()}")
    bench_steps(args)
    bench_eval(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
