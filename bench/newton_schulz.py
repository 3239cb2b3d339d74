"""Newton-Schulz chain variants side by side: what one Muon step's polar factors cost.

The shape groups of ``optim_step.py``'s model (``--width`` 128, 2 blocks: 2 x 128x128,
2 x 128x384, 4 x 128x512, wide-oriented), five Jordan steps, each variant timed
interleaved in one process (minimum of ``--reps``), with its relative error against the
same chain in float64. ``batched`` is ``newton_schulz`` on one stack (what the shipped
path runs per stack); the others are the options measured for issue 33 and dropped
(bench/README.md lists why). Then the model's own
matrices through ``polar_factors`` (what Muon runs), with and without a kept workspace,
against torch.optim.Muon's per-matrix chain, with page faults per call; with ``--parts``
the pieces of a step the shipped path chose between.

    .venv/bin/python bench/newton_schulz.py --threads 1 --reps 15 [--parts] [--compile]
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


def interleaved(runs: dict[str, Callable[[], object]], reps: int
                ) -> tuple[dict[str, float], dict[str, float]]:
    """Minimum seconds and median minor page faults per call of each run, interleaved."""
    best = {name: float("inf") for name in runs}
    faults: dict[str, list[int]] = {name: [] for name in runs}
    for _ in range(reps):
        for name, run in runs.items():
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
            faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return best, {name: statistics.median(f) for name, f in faults.items()}


def print_runs(title: str, best: dict[str, float], faults: dict[str, float] | None = None
               ) -> None:
    """A table of ``best`` in ms and as a ratio to its first row."""
    first = next(iter(best.values()))
    print(f"\n{title}:\n")
    print("| run | ms | x first |" + (" page faults per call |" if faults else "")
          + "\n|---|---:|---:|" + ("---:|" if faults else ""))
    for name, sec in best.items():
        tail = f" {faults[name]:.0f} |" if faults else ""
        print(f"| {name} | {sec * 1e3:.3f} | {sec / first:.2f} |{tail}")


class _NoPlans(dict):
    """A plan cache that keeps nothing: ``polar_factors`` re-plans every call."""

    def get(self, key: object, default: object = None) -> None:  # type: ignore[override]
        return None

    def __setitem__(self, key: object, value: object) -> None:
        pass


def model_table(width: int, reps: int, dtype: torch.dtype) -> None:
    """The model's 8 hidden matrices, interleaved: ``polar_factors`` as Muon calls it
    (families, a kept workspace and plan; matrices over ``BATCH_MAX_NUMEL`` entries alone),
    the same re-planning every call, with fresh buffers each call, with other size limits
    (every same-shape group batched; the old 2^16), and torch.optim.Muon's chain one matrix
    at a time (its factors stay bf16: ours are cast back to fp32, which torch does in its
    update); minimum time and median minor page faults per call."""
    from torch.optim._muon import _zeropower_via_newtonschulz

    Gs = model_matrices(width, torch.Generator().manual_seed(1))
    kept, replanned = polar.PolarWorkspace(), polar.PolarWorkspace()
    replanned._plans = _NoPlans()
    limits = {"every same-shape group batched": 1 << 62, "matrices over 2^16 alone": 1 << 16}
    planned = {name: polar.PolarWorkspace() for name in limits}
    shipped_limit = polar.BATCH_MAX_NUMEL
    try:                                       # a plan is kept: built once under each limit
        for name, limit in limits.items():
            polar.BATCH_MAX_NUMEL = limit
            polar.polar_factors(Gs, "jordan", STEPS, dtype, workspace=planned[name])
    finally:
        polar.BATCH_MAX_NUMEL = shipped_limit
    runs: dict[str, Callable[[], object]] = {
        "shipped (families, kept workspace and plan)": lambda: polar.polar_factors(
            Gs, "jordan", STEPS, dtype, workspace=kept),
        "re-planned every call": lambda: polar.polar_factors(
            Gs, "jordan", STEPS, dtype, workspace=replanned),
        "fresh buffers each call": lambda: polar.polar_factors(Gs, "jordan", STEPS, dtype),
        "torch's chain per matrix": lambda: [_zeropower_via_newtonschulz(
            G, JORDAN_COEFFICIENTS, STEPS, 1e-7) for G in Gs],
    }
    for name, workspace in planned.items():
        runs[name] = lambda workspace=workspace: polar.polar_factors(
            Gs, "jordan", STEPS, dtype, workspace=workspace)
    best, faults = interleaved(runs, reps)
    print_runs(f"The model's 8 hidden matrices at width {width} (tall ones transposed)",
               best, faults)


def parts_tables(width: int, reps: int) -> None:
    """The pieces of a Muon step the shipped path chose between, on the bench model's
    matrices at ``width`` (bf16 chains, fp32 parameters), each pair interleaved."""
    d = width
    gen = torch.Generator().manual_seed(2)
    A = (torch.randn(8, d, d, generator=gen) / 100).bfloat16()
    B = torch.empty_like(A)
    a, b, c = JORDAN_COEFFICIENTS
    stacks = [(0, 2), (2, 4), (4, 8)]
    best, _ = interleaved({
        "one batch of 8 (shipped: a family)": lambda: torch.baddbmm(
            A, A, A, beta=b, alpha=c, out=B),
        "one call per stack (2, 2, 4)": lambda: [torch.baddbmm(
            A[i:j], A[i:j], A[i:j], beta=b, alpha=c, out=B[i:j]) for i, j in stacks],
    }, reps * 10)
    print_runs(f"b A + c A^2 of the 8 matrices, one Newton-Schulz step (m = {d})", best)

    params = [G.clone() for G in model_matrices(d, gen)]
    wide = [(P.mT if P.size(0) > P.size(1) else P).contiguous().bfloat16() for P in params]
    factors = [W.mT if P.size(0) > P.size(1) else W for P, W in zip(params, wide, strict=True)]
    outs = [torch.empty_like(P) for P in params]

    def shipped_update() -> None:
        for P, O, out in zip(params, factors, outs, strict=True):
            P.add_(out.copy_(O), alpha=-1e-9)
    best, _ = interleaved({
        "cast and transpose into a kept fp32 buffer, then add (shipped)": shipped_update,
        "add the bf16 factor as it is (transposed views strided)": lambda: [
            P.add_(O, alpha=-1e-9) for P, O in zip(params, factors, strict=True)],
        "add through the parameter's transposed view": lambda: [
            (P.mT if P.size(0) > P.size(1) else P).add_(W, alpha=-1e-9)
            for P, W in zip(params, wide, strict=True)],
    }, reps * 5)
    print_runs("Adding the 8 bf16 factors to the fp32 parameters", best)

    stacks_by_name = {f"batched chain of {k} x {m}x{n}, per matrix":
                      torch.randn(k, m, n, generator=gen).bfloat16() for k, m, n in groups(d)}
    gram = torch.randn(d, 4 * d, generator=gen)
    gram = gram @ gram.mT
    runs: dict[str, Callable[[], object]] = {
        "eigh of one m x m Gram matrix (float32)": lambda: torch.linalg.eigh(gram)}
    runs.update({name: (lambda X=X: batched(X)) for name, X in stacks_by_name.items()})
    best, _ = interleaved(runs, reps)
    for name, X in stacks_by_name.items():
        best[name] /= X.shape[0]
    print_runs("The spectral route's eigh against a whole chain, per matrix", best)

    from raystudy.algorithms.optim.truncation import inner, inner_sum
    xs = [P.detach() for P in bench_model_parameters(d)]
    ys = [torch.randn(x.shape, generator=gen) for x in xs]

    def concatenated() -> object:
        small = [(x, y) for x, y in zip(xs, ys, strict=True) if x.numel() <= 4096]
        big = [inner(x, y) for x, y in zip(xs, ys, strict=True) if x.numel() > 4096]
        big.append(inner(torch.cat([x.reshape(-1) for x, _ in small]),
                         torch.cat([y.reshape(-1) for _, y in small])))
        return float(torch.stack(big).sum())
    best, _ = interleaved({
        f"one dot per pair (shipped, {len(xs)} pairs)": lambda: float(inner_sum(xs, ys)),
        "small pairs concatenated into one dot": concatenated,
    }, reps * 10)
    print_runs("A Momo inner-product sum over the whole model's parameters", best)


def bench_model_parameters(width: int) -> list[Tensor]:
    """Every parameter of ``optim_step.py``'s model at ``width`` (what a Momo sum runs over)."""
    from optim_step import TinyTransformer

    return list(TinyTransformer(256, width, 2).parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15, help="interleaved repetitions")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16")
    parser.add_argument("--width", type=int, default=128, help="the model's width d")
    parser.add_argument("--parts", action="store_true",
                        help="also the step's pieces: the m x m batch, the update, eigh, "
                             "the Momo sums")
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
    if args.parts:
        parts_tables(args.width, args.reps)


if __name__ == "__main__":
    main()
