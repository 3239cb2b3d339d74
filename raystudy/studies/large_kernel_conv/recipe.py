"""Is WBMM with 14x14 windows faster than a 5x5 depthwise conv? (operator timing study)

Paper: Song et al., "WBMM: Windowed Batch Matrix Multiplication for Efficient Large
Receptive Field Convolution" (arXiv 2607.02097, ICML 2026 spotlight; code
wansong-s/WBMM). Claims of the abstract read here: WBMM with 14x14 windows beats 5x5
depthwise conv in speed; its throughput improves with larger windows, opposite to
depthwise conv. The operators compute different functions (a block-local (2w-1)^2
kernel plus the identity vs a sliding k x k kernel) at different MAC counts (w^2 vs k^2).

Launch::

    raystudy sweep large_kernel_conv --profile quick      # 2 CPUs, one trial at a time
    raystudy sweep large_kernel_conv --profile quick --space claim   # + batch 32 cells
    raystudy run large_kernel_conv --in-process --set shape=2x320x14
    raystudy sweep large_kernel_conv --profile quick --space proxy --max-concurrent 2

A trial is one **timing block**: one shape x pass x dtype x device, every candidate
(``dw{k}``, ``wbmm{w}`` NC, ``wbmmc{w}`` C at fwd; ``lka{k}`` on CUDA where the iGEMM
extension imports) timed ``timing.reps`` times, in an order shuffled per repetition.
Each repetition is one cadence step, reported and checkpointed, so a resumed block
continues at the next repetition. The block index (``timing.block``) is the unit of the
paired tests in ``analysis.py``. Before timing, wbmm is checked against the per-window
conv2d reference; a mismatch fails the trial.
Trials run one at a time (the profile's ``sweep.max_concurrent: 1``): timings of
concurrent trials on shared cores are not comparable.

A ``kind=proxy`` trial instead trains the accuracy proxy (``proxy.py``): a tiny 4-stage
net with WBMM ``w``, same-support depthwise ``2w - 1`` or 5x5 depthwise as its mixer, on a
generated task whose label needs a ~10 px receptive field; one seed and one learning rate
per trial (space ``proxy`` sweeps three per mixer, chosen on validation images).
"""

from __future__ import annotations

import statistics

import torch

from raystudy import DataError, Metric, Study, TrialContext
from raystudy.algorithms.large_kernel import candidates, check, interleaved, lka_available
from raystudy.studies.large_kernel_conv.analysis import analyze
from raystudy.studies.large_kernel_conv.config import (
    LargeKernelConfig,
    ProxyConfig,
    TimingConfig,
    shape_of,
)
from raystudy.studies.large_kernel_conv.proxy import ProxyNet, relation_task


# ----------------------------------------------------------------------------- loop
def train_loop(config: LargeKernelConfig, ctx: TrialContext) -> None:
    if config.kind == "proxy":
        return proxy_loop(config.proxy, ctx)
    t = config.timing
    if t.device == "cuda" and not torch.cuda.is_available():  # checked on the trial's node
        raise RuntimeError("timing.device=cuda but torch sees no CUDA device on this node")
    torch.set_num_threads(t.threads)
    shape, dtype = shape_of(config), getattr(torch, t.dtype)
    windows = tuple(w for w in t.windows if w <= 2 * shape[2])
    for w in windows:  # the gate: outputs equal the windowed reference
        err = check(shape, w, dtype, t.device, seed=t.block)
        if err > t.check_tolerance:
            raise DataError(f"wbmm{w} at {shape} differs from the per-window conv2d "
                            f"reference by {err:.2e} > timing.check_tolerance="
                            f"{t.check_tolerance:g}")
    fns = candidates(shape, windows, t.kernels, t.phase, t.device, dtype, seed=t.block,
                     lka_kernels=lka_kernels(t))
    cadence = ctx.cadence(t.reps, 1, 1)
    times: dict[str, list[float]] = ctx.load_checkpoint() or {k: [] for k in fns}
    for step in cadence:
        times = interleaved(fns, step, t.warmup if step == cadence_start(times) else 0,
                            t.device, t.clock, seed=t.block, done=times)
        med = {k: statistics.median(v) for k, v in times.items()}
        metrics = {f"time_ms/{k}": v for k, v in med.items()}
        if "wbmm14" in med:  # absent where 14 is not timed (report refuses NaN)
            metrics["ratio/wbmm14_dw5"] = med["wbmm14"] / med["dw5"]
        metrics.update({"block/rep": float(step), "check/passed": 1.0})
        ctx.report(metrics, checkpoint=times, step=step)


def proxy_loop(p: ProxyConfig, ctx: TrialContext) -> None:
    """Train the proxy net on the relation task; validation and test accuracy after every
    epoch (1,000 images each, drawn apart from the training set and from each other: the
    analysis picks each mixer's lr on validation and reads the test accuracy at it)."""
    torch.set_num_threads(1)
    x, y = relation_task(p.train_size, seed=0, noise=p.noise)
    x_val, y_val = relation_task(1000, seed=2, noise=p.noise)  # the lr is chosen on these
    x_test, y_test = relation_task(1000, seed=1, noise=p.noise)
    torch.manual_seed(p.seed)
    net = ProxyNet(p.mixer, p.channels)
    opt = torch.optim.AdamW(net.parameters(), lr=p.lr)
    batches = torch.Generator().manual_seed(p.seed)
    state = ctx.load_checkpoint()
    if state is not None:
        net.load_state_dict(state["net"])
        opt.load_state_dict(state["opt"])
        batches.set_state(state["batches"])
    for epoch in ctx.cadence(p.epochs, 1, 1):
        net.train()
        order = torch.randperm(len(y), generator=batches)
        for i in range(0, len(y), 64):
            idx = order[i:i + 64]
            loss = torch.nn.functional.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            acc = float((net(x_test).argmax(1) == y_test).float().mean())
            val_acc = float((net(x_val).argmax(1) == y_val).float().mean())
        ctx.report({"eval/acc": acc, "eval/val_acc": val_acc, "train/loss": loss.item()},
                   step=epoch,
                   checkpoint={"net": net.state_dict(), "opt": opt.state_dict(),
                               "batches": batches.get_state()})


def lka_kernels(t: TimingConfig) -> tuple[int, ...]:
    """The kernels LKA (iGEMM, ``lka{k}``) is timed at: ``timing.kernels`` on CUDA where
    the extension imports (claim W-C4), else none (CPU blocks time no LKA)."""
    return tuple(t.kernels) if t.device == "cuda" and lka_available() else ()


def cadence_start(times: dict[str, list[float]]) -> int:
    """The first repetition this process times (warm-up runs before it)."""
    return min((len(v) for v in times.values()), default=0) + 1


# ----------------------------------------------------------------------------- study
STUDY = Study(
    name="large_kernel_conv",
    description=("WBMM (windowed batch matmul) vs depthwise convolution: operator timing "
                 "blocks with a paired speed claim"),
    config_cls=LargeKernelConfig,
    train_loop=train_loop,
    metrics=(
        Metric("ratio/wbmm14_dw5", "min", "median time of WBMM-14 (NC) over dw5's in the "
               "block (< 1: WBMM-14 faster)"),
        Metric("time_ms/dw5", "min", "median ms of the 5x5 depthwise conv in the block"),
        Metric("eval/acc", "max", "the accuracy proxy's test accuracy (kind=proxy)"),
        Metric("eval/val_acc", "max", "the accuracy proxy's validation accuracy: each "
               "mixer's lr is chosen on it (kind=proxy)"),
    ),
    analyze=analyze,
)
