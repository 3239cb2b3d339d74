"""Newton-Schulz chain variants side by side: what one Muon step's polar factors cost.

The shape groups of ``optim_step.py``'s model (``--width`` 128, 2 blocks: 2 x 128x128,
2 x 128x384, 4 x 128x512, wide-oriented), five Jordan steps, each variant timed
interleaved in one process (minimum of ``--reps``), with its relative error against the
same chain in float64. ``batched`` is ``newton_schulz`` on one stack (what the shipped
path runs per stack); the others are the options measured for issue 33 and dropped
(bench/README.md lists why). Then the model's own
matrices through ``polar_factors`` (what Muon runs), with and without a kept workspace,
against torch.optim.Muon's per-matrix chain, with page faults per call.

    .venv/bin/python bench/newton_schulz.py --threads 1 --reps 15 [--compile]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from collections.abc import Callable

import torch
from _hardware import describe
from torch import Tensor

from raystudy.algorithms.optim import polar
from raystudy.algorithms.optim.polar import JORDAN_COEFFICIENTS, newton_schulz

a, b, c = JORDAN_COEFFICIENTS
STEPS = 5
def groups(width: int) -> list[tuple[int, int, int]]:
    """The bench model's wide-oriented shape groups at ``width`` (2 blocks)."""
    return [(2, width, width), (2, width, 3 * width), (4, width, 4 * width)]


def batched(X: Tensor) -> Tensor:
    """``polar.newton_schulz`` on a stack: bmm, then two baddbmm per step."""
    return newton_schulz(X, [JORDAN_COEFFICIENTS] * STEPS, X.dtype)


def per_matrix(X: Tensor) -> Tensor:
    """torch.optim.Muon's shape of the work: one addmm chain per matrix."""
    return torch.stack([newton_schulz(X_i, [JORDAN_COEFFICIENTS] * STEPS, X.dtype)
                        for X_i in X.unbind(0)])


def separate_ops(X: Tensor) -> Tensor:
    """bmm and add in place of baddbmm."""
    X = X / torch.linalg.vector_norm(X, dim=(-2, -1), keepdim=True)
    for _ in range(STEPS):
        A = torch.bmm(X, X.mT)
        B = torch.add(torch.bmm(A, A), A, alpha=b / c).mul_(c)
        X = torch.bmm(B, X).add_(X, alpha=a)
    return X


def out_buffers(X: Tensor) -> Tensor:
    """The same ops writing into three preallocated buffers (now part of the shipped path:
    ``PolarWorkspace``; their gain is in the whole step, where fresh buffers fault)."""
    X = X / torch.linalg.vector_norm(X, dim=(-2, -1), keepdim=True)
    A = X.new_empty(X.shape[0], X.shape[1], X.shape[1])
    B, Y = torch.empty_like(A), torch.empty_like(X)
    for _ in range(STEPS):
        torch.bmm(X, X.mT, out=A)
        torch.baddbmm(A, A, A, beta=b, alpha=c, out=B)
        torch.baddbmm(X, B, X, beta=a, out=Y)
        X, Y = Y, X
    return X


def gram(X: Tensor, restart: int = 2) -> Tensor:
    """Iterate on ``A = X X^T`` and an m x m accumulator ``Q`` (``X_j = Q_j X_0``), since
    ``A_{j+1} = P_j A_j P_j`` with ``P_j = a I + b A_j + c A_j^2``; one restart at step
    ``restart`` recomputes ``X`` and ``A`` to stop rounding errors piling up."""
    X0 = X / torch.linalg.vector_norm(X, dim=(-2, -1), keepdim=True)
    A, Q = torch.bmm(X0, X0.mT), None
    for j in range(STEPS):
        if j == restart and Q is not None:
            X0, Q = torch.bmm(Q, X0), None
            A = torch.bmm(X0, X0.mT)
        P = torch.baddbmm(A, A, A, beta=b, alpha=c)
        P.diagonal(dim1=-2, dim2=-1).add_(a)
        Q = P if Q is None else torch.bmm(P, Q)
        if j < STEPS - 1:
            A = torch.bmm(torch.bmm(P, A), P)
    return torch.bmm(Q, X0)


VARIANTS: dict[str, Callable[[Tensor], Tensor]] = {
    "batched": batched, "per matrix (torch's)": per_matrix,
    "separate ops": separate_ops, "out= buffers": out_buffers, "Gram, 1 restart": gram,
}


def compiled_variant() -> Callable[[Tensor], Tensor]:
    """``batched`` through ``torch.compile`` (inductor), shapes static; the first call of
    each shape compiles (timed apart, printed)."""
    chain = torch.compile(batched, dynamic=False)

    def run(X: Tensor) -> Tensor:
        return chain(X)
    return run


def model_matrices(width: int, gen: torch.Generator) -> list[Tensor]:
    """The bench model's hidden matrices as Muon gets them (fp32, out x in): per block a
    tall qkv (3d x d), proj (d x d), a tall fc1 (4d x d) and a wide fc2 (d x 4d)."""
    shapes = [(3 * width, width), (width, width), (4 * width, width), (width, 4 * width)]
    return [torch.randn(*shape, generator=gen) for _ in range(2) for shape in shapes]


def model_table(width: int, reps: int, dtype: torch.dtype) -> None:
    """The model's 8 hidden matrices three ways, interleaved: ``polar_factors`` as Muon calls
    it (families, a kept workspace), the same with fresh buffers each call, and
    torch.optim.Muon's chain one matrix at a time; minimum time and median minor page
    faults per call (freed buffers come back from the OS as faults)."""
    from torch.optim._muon import _zeropower_via_newtonschulz

    Gs = model_matrices(width, torch.Generator().manual_seed(1))
    workspace = polar.PolarWorkspace()
    runs: dict[str, Callable[[], object]] = {
        "shipped (families, kept workspace)": lambda: polar.polar_factors(
            Gs, "jordan", STEPS, dtype, workspace=workspace),
        "fresh buffers each call": lambda: polar.polar_factors(Gs, "jordan", STEPS, dtype),
        "torch's chain per matrix": lambda: [_zeropower_via_newtonschulz(
            G, JORDAN_COEFFICIENTS, STEPS, 1e-7) for G in Gs],
    }
    best = {name: float("inf") for name in runs}
    faults: dict[str, list[int]] = {name: [] for name in runs}
    for _ in range(reps):
        for name, run in runs.items():
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
            faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    shipped = best["shipped (families, kept workspace)"]
    print(f"\nThe model's 8 hidden matrices at width {width} (tall ones transposed):\n")
    print("| run | ms | x shipped | page faults per call |\n|---|---:|---:|---:|")
    for name, sec in best.items():
        print(f"| {name} | {sec * 1e3:.2f} | {sec / shipped:.2f} | "
              f"{statistics.median(faults[name]):.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15, help="interleaved repetitions")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16")
    parser.add_argument("--width", type=int, default=128, help="the model's width d")
    parser.add_argument("--compile", action="store_true",
                        help="also torch.compile the shipped chain (compiles per shape first)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    if args.compile:
        VARIANTS["torch.compile(batched)"] = compiled_variant()
    print(describe())
    print(f"{STEPS} Jordan steps in {args.dtype}; min of {args.reps} interleaved runs\n")
    print(f"| {'group':<12} | {'variant':<22} | {'ms':>6} | {'x batched':>9} | "
          f"{'rel. error':>10} |")
    print(f"|{'-' * 14}|{'-' * 24}|{'-' * 7}:|{'-' * 10}:|{'-' * 11}:|")
    gen = torch.Generator().manual_seed(0)
    for shape in groups(args.width):
        G = torch.randn(*shape, generator=gen) * torch.logspace(-3, 0, shape[-1])
        X = G.to(dtype)
        exact = batched(X.double())
        if args.compile:
            start = time.perf_counter()
            VARIANTS["torch.compile(batched)"](X)
            print(f"(torch.compile of {'x'.join(map(str, shape))}: "
                  f"{time.perf_counter() - start:.1f} s, first call)")
        best = {name: float("inf") for name in VARIANTS}
        for _ in range(args.reps):
            for name, fn in VARIANTS.items():
                start = time.perf_counter()
                fn(X)
                best[name] = min(best[name], time.perf_counter() - start)
        for name, fn in VARIANTS.items():
            error = float((fn(X).double() - exact).norm() / exact.norm())
            label = "x".join(map(str, shape))
            print(f"| {label:<12} | {name:<22} | {best[name] * 1e3:>6.2f} | "
                  f"{best[name] / best['batched']:>9.2f} | {error:>10.4f} |")
    model_table(args.width, args.reps, dtype)


if __name__ == "__main__":
    main()
