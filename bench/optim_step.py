"""Time one optimizer step, all optimizers side by side on the same model and gradients.

Usage:
    .venv/bin/python bench/optim_step.py               # CPU, and CUDA too if available
    .venv/bin/python bench/optim_step.py --reps 15 --width 256

Model: a small transformer-shaped parameter set (token embedding, per layer a
fused QKV, an attention output, two MLP matrices, two LayerNorms; an output
head): with the defaults 8 hidden matrices of width 128. Each optimizer gets its
own copy of the parameters and the same fixed random gradients; repetitions are
interleaved across optimizers and the median time per step is reported, with
ratios to ``torch.optim.Muon`` and to ``torch.optim.AdamW``.
``torch.optim.Muon`` accepts 2-D parameters only, so every Muon-vs-Muon row
runs on the hidden matrices only; the other rows step the whole model.

Targets (issues 19 and 33), each for the hardware it applies to (the bench prints what
it ran on and SKIPs the others; ``--width`` sets the width the targets are read at):

* CPUs with native bf16 (``avx512_bf16``/``amx_bf16``): our Muon with its default
  precision (the faster of bf16 and fp32, timed once per process: see
  ``polar.default_polar_dtype``) >= 1.25x faster than torch.optim.Muon at width 128,
  and never slower (ratio <= 1.0) at width >= 256.
* CPUs where bf16 is emulated: our Muon (default dtype, fp32 there) >= 10x faster than
  torch.optim.Muon (which always iterates in bf16).
* CUDA: our Muon (bf16) <= 0.8x torch.optim.Muon's time.
* Every device: MuonMax (stale and fresh nuclear norm), MuonMaxMomo and MuonAdamMomo
  <= 1.15x our Muon's time; our Muon with ns_dtype=bf16 <= 1.10x torch.optim.Muon's
  time (the same arithmetic, batched).

The MuonMax/Momo rows step the whole model (their Adam part too), our Muon only the
hidden matrices, so that ratio includes the Adam part of the step. The table's last
column is the median of minor page faults per step: buffers freed and allocated again
each step come back from the OS as faults (torch.optim.Muon's per-matrix tensors take
none; ours took 350-1,000 a step until the optimizers kept their buffers).
"""

from __future__ import annotations

import argparse
import copy
import resource
import statistics
import time
from collections.abc import Callable

import torch
from _hardware import describe, native_bf16, verdict
from torch import nn

from raystudy.algorithms.optim import (
    Momo,
    MomoAdam,
    Muon,
    MuonAdam,
    MuonAdamMomo,
    MuonMax,
    MuonMaxMomo,
    matrix_param_groups,
)


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)


class TinyTransformer(nn.Module):
    def __init__(self, vocab: int, d: int, layers: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)


def hidden_matrices(model: TinyTransformer) -> list[nn.Parameter]:
    return [
        p for b in model.blocks for p in (b.qkv.weight, b.proj.weight, b.fc1.weight, b.fc2.weight)
    ]


Factory = Callable[[TinyTransformer], torch.optim.Optimizer]

FACTORIES: dict[str, Factory] = {
    "torch AdamW (all)": lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3),
    "torch SGD (all)": lambda m: torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9),
    "torch Muon (hidden)": lambda m: torch.optim.Muon(hidden_matrices(m), lr=1e-3),
    "Muon fp32 (hidden)": lambda m: Muon(hidden_matrices(m), lr=1e-3, ns_dtype=torch.float32),
    "Muon bf16 (hidden)": lambda m: Muon(hidden_matrices(m), lr=1e-3, ns_dtype=torch.bfloat16),
    "Muon default (hidden)": lambda m: Muon(hidden_matrices(m), lr=1e-3),
    "MuonAdam": lambda m: MuonAdam(matrix_param_groups(m), lr=1e-4),
    "MuonMax stale": lambda m: MuonMax(matrix_param_groups(m), lr=1e-6),
    "MuonMax fresh": lambda m: MuonMax(matrix_param_groups(m), lr=1e-6, stale_nuclear_norm=False),
    "MuonMaxMomo": lambda m: MuonMaxMomo(matrix_param_groups(m), lr=1e-6),
    "MuonAdamMomo": lambda m: MuonAdamMomo(matrix_param_groups(m), lr=1e-4),
    "Momo": lambda m: Momo(m.parameters(), lr=1e-3),
    "MomoAdam": lambda m: MomoAdam(m.parameters(), lr=1e-4),
}


def measure(device: str, args: argparse.Namespace) -> tuple[dict[str, float], dict[str, float]]:
    """Median seconds and minor page faults per step for every factory on ``device`` (a
    step that frees and re-allocates large buffers gets them back from the OS as faults:
    the first cause of our Muon's lost time on CPU, issue 33)."""
    torch.manual_seed(0)
    base = TinyTransformer(args.vocab, args.width, args.layers).to(device)
    grads = [torch.randn_like(p) * 1e-2 for p in base.parameters()]
    runs = {}
    for name, factory in FACTORIES.items():
        model = copy.deepcopy(base)
        for p, g in zip(model.parameters(), grads, strict=True):
            p.grad = g.clone()
        runs[name] = factory(model)

    clock = time.process_time if args.clock == "cpu" and device == "cpu" else time.perf_counter

    def step(opt: torch.optim.Optimizer) -> float:
        if device == "cuda":
            torch.cuda.synchronize()
        start = clock()
        if getattr(opt, "uses_loss", False):
            opt.step(loss=3.0)
        else:
            opt.step()
        if device == "cuda":
            torch.cuda.synchronize()
        return clock() - start

    for opt in runs.values():
        for _ in range(args.warmup):
            step(opt)
    times: dict[str, list[float]] = {name: [] for name in runs}
    faults: dict[str, list[int]] = {name: [] for name in runs}
    for _ in range(args.reps):
        for name, opt in runs.items():
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            times[name].append(step(opt))
            faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    if args.profile:
        profile_steps(args.profile, runs, step)
    return ({name: statistics.median(ts) for name, ts in times.items()},
            {name: statistics.median(fs) for name, fs in faults.items()})


PHASES = {
    "aten::bmm": "A = X X^T (bmm / mm)", "aten::mm": "A = X X^T (bmm / mm)",
    "aten::baddbmm": "b A + c A^2 and a X + B X (baddbmm / addmm)",
    "aten::addmm": "b A + c A^2 and a X + B X (baddbmm / addmm)",
    "aten::copy_": "copies (casts, transposes, beta terms)",
    "aten::lerp": "momentum, Nesterov", "aten::lerp_": "momentum, Nesterov",
    "aten::_foreach_lerp": "momentum, Nesterov", "aten::_foreach_lerp_": "momentum, Nesterov",
    "aten::div_": "normalisation", "aten::div": "normalisation", "aten::norm": "normalisation",
    "aten::linalg_vector_norm": "normalisation", "aten::clamp": "normalisation",
    "aten::add_": "weight decay, update", "aten::mul_": "weight decay, update",
    "aten::mul": "weight decay, update", "aten::_foreach_mul_": "weight decay, update",
}
"""The operators of a Muon step by phase, for ``--profile``'s summary (the two ``baddbmm``
products cannot be told apart for square matrices, so they share a row)."""


def profile_steps(names: list[str], runs: dict[str, torch.optim.Optimizer],
                  step: Callable[[torch.optim.Optimizer], float], steps: int = 20) -> None:
    """Print torch.profiler's operator table (self CPU time, one row per operator and input
    shapes) of ``steps`` steps of each named optimizer: where a step's time goes."""
    from torch.profiler import ProfilerActivity, profile
    for name in names:
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            for _ in range(steps):
                step(runs[name])
        print(f"\n## profile: {name}, {steps} steps (self CPU time per operator and shapes)\n")
        averages = prof.key_averages(group_by_input_shape=True)
        print(averages.table(sort_by="self_cpu_time_total", row_limit=24,
                             max_shapes_column_width=60))
        phases: dict[str, float] = {}
        for event in averages:
            phase = PHASES.get(event.key, "Python in step" if event.key.startswith(
                "Optimizer.step") else "other (views, empty, ...)")
            phases[phase] = phases.get(phase, 0.0) + event.self_cpu_time_total / 1e3 / steps
        total = sum(phases.values())
        print(f"\n{name}: the same, summed into phases (ms per step)\n")
        print("| phase | ms | share |\n|---|---:|---:|")
        for phase, ms in sorted(phases.items(), key=lambda item: -item[1]):
            print(f"| {phase} | {ms:.2f} | {100 * ms / total:.0f} % |")
        print(f"| in all | {total:.2f} | |")


def report(device: str, measured: tuple[dict[str, float], dict[str, float]],
           args: argparse.Namespace) -> bool:
    medians, faults = measured
    ref_muon, ref_adamw = medians["torch Muon (hidden)"], medians["torch AdamW (all)"]
    clock = "CPU" if args.clock == "cpu" and device == "cpu" else "wall"
    print(f"\n## {device}: median {clock} time per step ({torch.get_num_threads()} threads)\n")
    print(f"| {'optimizer':<24} | {'ms/step':>9} | {'x torch Muon':>12} | {'x AdamW':>8} | "
          f"{'page faults':>11} |")
    print(f"|{'-' * 26}|{'-' * 11}:|{'-' * 13}:|{'-' * 9}:|{'-' * 12}:|")
    for name, sec in medians.items():
        ms, vs_muon, vs_adamw = sec * 1e3, sec / ref_muon, sec / ref_adamw
        print(f"| {name:<24} | {ms:>9.2f} | {vs_muon:>12.3f} | {vs_adamw:>8.2f} | "
              f"{faults[name]:>11.0f} |")
    native = native_bf16()
    ours = medians["Muon default (hidden)"]
    # (name, kind, bound, applies here, the hardware it is for); kind: "speed-up" and
    # "time ratio" compare with torch.optim.Muon, "vs ours" with our Muon
    if device == "cpu":
        targets = [
            ("Muon default (hidden)", "speed-up", 1.25, native and args.width == 128,
             "CPUs with native bf16, width 128"),
            ("Muon default (hidden)", "time ratio", 1.0, native and args.width >= 256,
             "CPUs with native bf16, width >= 256"),
            ("Muon default (hidden)", "speed-up", 10.0, not native, "CPUs with emulated bf16"),
            ("Muon bf16 (hidden)", "time ratio", 1.10, True, "every CPU"),
        ]
    else:
        targets = [("Muon default (hidden)", "time ratio", 0.8, True, "CUDA")]
    targets += [(name, "vs ours", 1.15, True, "every device")
                for name in ("MuonMax stale", "MuonMax fresh", "MuonMaxMomo", "MuonAdamMomo")]
    print()
    ok = True
    for name, kind, bound, applies, hardware in targets:
        if kind == "speed-up":
            value = ref_muon / medians[name]
            passed = value >= bound
            line = f"{value:.2f}x faster than torch Muon (target >= {bound}x"
        elif kind == "time ratio":
            value = medians[name] / ref_muon
            passed = value <= bound
            line = f"{value:.3f}x torch Muon's time (target <= {bound}x"
        else:
            value = medians[name] / ours
            passed = value <= bound
            line = f"{value:.3f}x our Muon's time (target <= {bound}x"
        if applies:
            ok &= passed
        print(f"{verdict(applies, passed)} [{device}] {name}: {line} on {hardware})")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=9, help="interleaved repetitions")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per optimizer")
    parser.add_argument("--width", type=int, default=128, help="model width d")
    parser.add_argument("--layers", type=int, default=2, help="transformer blocks")
    parser.add_argument("--vocab", type=int, default=256, help="vocabulary size")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--cpu-only", action="store_true", help="skip CUDA even if available")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="CPU rows: wall time, or the process's CPU time (with one "
                             "thread, the step's own work: steadier when other jobs load "
                             "the cores)")
    parser.add_argument("--profile", action="append", default=[], choices=list(FACTORIES),
                        metavar="NAME", help="also print the operator profile of NAME's step "
                        "(repeatable; one of the table's rows)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}; width {args.width}, {args.layers} layers, "
        f"vocab {args.vocab}; {args.reps} reps, {args.warmup} warm-up"
    )
    print(describe())
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() and not args.cpu_only else [])
    results = [report(device, measure(device, args), args) for device in devices]
    if "cuda" not in devices:
        print("SKIP [cuda] Muon default (hidden): <= 0.8x torch Muon's time, for CUDA "
              "(no CUDA device here)")
    print("\nALL PASS" if all(results) else "\nSOME TARGETS FAILED")


if __name__ == "__main__":
    main()
