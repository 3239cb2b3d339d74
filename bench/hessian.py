"""Hessian top-k eigenvalues: our Lanczos vs dense eigvalsh vs PyHessian's power iteration,
and the cost of the plasticity study's metrics pass relative to training.

    .venv/bin/python bench/hessian.py            # ~3 minutes on one core
    .venv/bin/python bench/hessian.py --quick    # smaller nets, one repetition
    .venv/bin/python bench/hessian.py --device cuda --parts 12   # parts 1-2 on a GPU

1. Agreement with the dense spectrum: an MLP small enough for ``eigvalsh`` of its full
   Hessian here (--dense-hidden, ~6k parameters; the Hessian of a 50k-parameter net is
   20 GB in float64, more than this box has); top-k relative error of Lanczos after m
   iterations, and the time of each.
2. On the quick profile's MLP (64-256-256-10, 85k parameters, >= 50k) on 512 digits:
   Lanczos (full re-orthogonalisation, torch.func HVPs) vs PyHessian's power iteration
   with deflation (``pip install pyhessian``; if it is missing the same algorithm runs
   as written out here). The reference spectrum is a 400-step Lanczos run, itself checked
   against eigvalsh in part 1. The speed-up is taken at equal agreement: the fewest
   Lanczos iterations whose top-k error is at most PyHessian's.
3. The metrics pass (features every task, the Hessian every ``metrics.hessian_every``
   tasks and at the last) as a fraction of training time, with the quick profile as shipped
   (its 60 tasks; ``--tasks`` changes that).

Times are medians of interleaved repetitions in one process; ratios are what to compare.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable

import torch

from raystudy.algorithms.plasticity import MLP, full_hessian, lanczos, make_hvp
from raystudy.algorithms.plasticity.data import digits

CE = torch.nn.functional.cross_entropy


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be >= 1")
    return value


def trained_mlp(hidden: tuple[int, ...], steps: int, seed: int = 0, device: str = "cpu"):
    """An MLP trained ``steps`` Adam steps on digits (on the CPU, the same net on every
    device), and the 512 samples it is measured on, both moved to ``device``."""
    data = digits()
    torch.manual_seed(seed)
    model = MLP(64, hidden, 10)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = data.x_train[:512], data.y_train[:512]
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        rows = torch.randint(0, len(x), (32,), generator=g)
        loss = CE(model(x[rows]), y[rows])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.to(device), x.to(device), y.to(device)


def timed(fn: Callable[[], torch.Tensor], reps: int) -> tuple[torch.Tensor, float]:
    times, out = [], None
    sync = torch.cuda.synchronize if torch.cuda.is_initialized() else lambda: None
    for _ in range(reps):
        sync()
        start = time.perf_counter()
        out = fn()
        sync()  # the kernels a CUDA run queued are part of its time
        times.append(time.perf_counter() - start)
    return out, statistics.median(times)


def ordered(values, by: str) -> torch.Tensor:
    """Descending by value (``top``) or by magnitude (``magnitude``, what power iteration finds)."""
    values = torch.as_tensor(values).to(dtype=torch.float64, device="cpu")
    key = values if by == "top" else values.abs()
    return values[key.argsort(descending=True)]


def lanczos_top(model, x, y, k: int, iterations: int, seed: int = 0,
                by: str = "top") -> torch.Tensor:
    matvec, p = make_hvp(model, CE, x, y)
    tri = lanczos(matvec, p, iterations, generator=torch.Generator().manual_seed(seed),
                  dtype=next(model.parameters()).dtype, device=x.device)
    return ordered(tri.nodes_weights()[0], by)[:k]


def errors(values, reference: torch.Tensor, by: str = "top") -> tuple[float, float, int]:
    """Max and median relative error over the k values (both in the same order), and how
    many reference values have a match within 1 % anywhere in ``values``."""
    values, reference = ordered(values, by), ordered(reference, by)
    rel = (values - reference).abs() / reference.abs().clamp_min(1e-12)
    close = (values[None, :] - reference[:, None]).abs() <= 0.01 * reference.abs()[:, None]
    return float(rel.max()), float(rel.median()), int(close.any(1).sum())


def power_iteration_deflation(model, x, y, k: int, max_iter: int = 100, tol: float = 1e-3,
                              seed: int = 0) -> list[float]:
    """PyHessian's algorithm written out: power iteration, deflating found eigenvectors."""
    matvec, p = make_hvp(model, CE, x, y)
    g = torch.Generator().manual_seed(seed)
    values, vectors = [], []
    for _ in range(k):
        v = torch.randn(p, generator=g).to(x.device)
        v /= v.norm()
        value = None
        for _ in range(max_iter):
            for u in vectors:
                v = v - (v @ u) * u
            v /= v.norm()
            hv = matvec(v)
            estimate = float(hv @ v)
            v = hv / hv.norm()
            if value is not None and abs(value - estimate) / (abs(value) + 1e-6) < tol:
                break
            value = estimate
        values.append(value)
        vectors.append(v)
    return values


def pyhessian_top(model, x, y, k: int, max_iter: int, tol: float) -> tuple[list[float], str]:
    try:
        from pyhessian import hessian
    except ImportError:
        return (power_iteration_deflation(model, x, y, k, max_iter, tol),
                "written out (no pyhessian)")
    torch.manual_seed(0)
    values, _ = hessian(model, CE, data=(x, y), cuda=x.device.type == "cuda").eigenvalues(
        maxIter=max_iter, tol=tol, top_n=k)
    model.zero_grad(set_to_none=True)
    return values, "pyhessian 0.1"


def part_dense(args) -> None:
    model, x, y = trained_mlp((args.dense_hidden, args.dense_hidden), 300, device=args.device)
    model.double()
    x = x.double()
    p = sum(q.numel() for q in model.parameters())
    dense, t_dense = timed(lambda: torch.linalg.eigvalsh(full_hessian(model, CE, x, y)), 1)
    reference = dense.flip(0)[:args.k]
    print(f"\n1. Lanczos vs dense eigvalsh, MLP 64-{args.dense_hidden}-{args.dense_hidden}-10 "
          f"({p} parameters, float64, 512 samples); dense Hessian + eigvalsh {t_dense:.1f} s")
    print(f"   top-{args.k}: {reference[0]:.4g} .. {reference[-1]:.4g}")
    print("   | Lanczos iterations | max rel. error | median rel. error | within 1 % | time (s) "
          "| x faster than dense |")
    print("   |---:|---:|---:|---:|---:|---:|")
    for m in (40, 60, 100, 150):
        top, t = timed(lambda m=m: lanczos_top(model, x, y, args.k, m), args.reps)
        worst, median, found = errors(top, reference)
        print(f"   | {m} | {worst:.1e} | {median:.1e} | {found}/{args.k} | {t:.3f} | "
              f"{t_dense / t:.0f} |")


def part_pyhessian(args) -> None:
    model, x, y = trained_mlp((256, 256), 300, device=args.device)
    p = sum(q.numel() for q in model.parameters())
    reference = lanczos_top(model, x, y, args.k, 400, seed=1, by="magnitude")
    print(f"\n2. MLP 64-256-256-10 ({p} parameters, float32, 512 digits), the {args.k} "
          "eigenvalues largest in magnitude (what power iteration finds); reference: 400 "
          f"Lanczos steps ({reference[0]:.4g} .. {reference[-1]:.4g}, "
          f"{int((reference < 0).sum())} negative)")
    print("   | method | max rel. error | median rel. error | within 1 % | time (s) |")
    print("   |---|---:|---:|---:|---:|")
    lanczos_rows = {}
    for m in (40, 60, 80, 100, 150):
        top, t = timed(lambda m=m: lanczos_top(model, x, y, args.k, m, by="magnitude"),
                       args.reps)
        lanczos_rows[m] = (*errors(top, reference, "magnitude"), t)
        worst, median, found, _ = lanczos_rows[m]
        print(f"   | Lanczos {m} | {worst:.1e} | {median:.1e} | {found}/{args.k} | {t:.3f} |")
    for max_iter, tol in ((100, 1e-3), (300, 1e-5)):
        (values, what), t = timed(
            lambda i=max_iter, tol=tol: pyhessian_top(model, x, y, args.k, i, tol), 1)
        worst, median, found = errors(values, reference, "magnitude")
        print(f"   | power iteration + deflation, maxIter {max_iter}, tol {tol:g} ({what}) | "
              f"{worst:.1e} | {median:.1e} | {found}/{args.k} | {t:.2f} |")
        good = [m for m, row in sorted(lanczos_rows.items())
                if row[0] <= worst and row[2] >= found]
        if good:
            m = good[0]
            ratio = t / lanczos_rows[m][3]
            verdict = "PASS" if ratio >= 10 else "FAIL"
            print(f"   -> at equal agreement (Lanczos {m}: max error {lanczos_rows[m][0]:.1e}, "
                  f"{lanczos_rows[m][2]} within 1 %) Lanczos is {ratio:.0f}x faster "
                  f"(target >= 10x: {verdict})")
        else:
            print("   -> no Lanczos row reaches this agreement; add iterations")
        missed = [float(v) for v in reference
                  if not any(abs(float(v) - u) <= 0.01 * abs(float(v)) for u in values)]
        if missed:
            print(f"      power iteration missed {', '.join(f'{v:.4g}' for v in missed)}")


def part_overhead(args) -> None:
    from raystudy.contract.context import LocalContext
    from raystudy.platform.configuration.config import apply_overrides, load_config
    from raystudy.studies.plasticity.recipe import STUDY, train_loop

    config = load_config(STUDY.config_cls, STUDY.name, "quick")
    if args.tasks:
        config = apply_overrides(config, {"stream.tasks": args.tasks})
    ctx = LocalContext(STUDY.metrics)
    train_loop(config, ctx)
    last = ctx.reports[-1]
    m = config.metrics
    fraction = last["metrics/overhead"]
    verdict = "PASS" if fraction < 0.10 else "FAIL"
    print(f"\n3. Metrics pass / training time, quick profile, {config.stream.tasks} tasks of "
          f"{config.train.steps_per_task} steps; features every task on {m.samples} samples, "
          f"Hessian ({m.lanczos_iterations} Lanczos steps) every {m.hessian_every} tasks and "
          f"at the last: {100 * fraction:.1f} % (target < 10 %: {verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller nets, one repetition")
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--reps", type=positive_int, default=3)
    parser.add_argument("--k", type=positive_int, default=20)
    parser.add_argument("--dense-hidden", type=positive_int, default=48,
                        help="width of the two hidden layers of the dense-check MLP")
    parser.add_argument("--tasks", type=int, default=0,
                        help="tasks of the quick profile timed in part 3 (0: the profile's)")
    parser.add_argument("--parts", default="123", help="which parts to run, e.g. 3")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where parts 1-2 compute (part 3 runs the quick profile as a "
                        "trial would)")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.exit(2, "hessian.py: --device cuda, but torch sees no CUDA device\n")
    if args.quick:
        args.reps, args.dense_hidden, args.tasks = 1, 24, args.tasks or 20
    torch.set_num_threads(args.threads)
    gpu = f", {torch.cuda.get_device_name()}" if args.device == "cuda" else ""
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} thread(s); parts 1-2 on {args.device}{gpu}")
    for part, run in (("1", part_dense), ("2", part_pyhessian), ("3", part_overhead)):
        if part in args.parts:
            run(args)


if __name__ == "__main__":
    main()
