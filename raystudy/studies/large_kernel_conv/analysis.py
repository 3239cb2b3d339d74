"""The timing study's report: claims, tables and a figure from the timing blocks.

Each trial is one block (``timing.block``) at one cell (device, pass, shape, threads,
dtype, clock); its last report holds the block's median ms per candidate
(``time_ms/NAME``). The block is the unit of every paired test (candidates of one block ran
interleaved on the same inputs). A **regime** is a cell without its pass and shape (device,
batch, threads, dtype, clock): it is each timing claim's scope, and each Holm family runs
across the cells (shapes x passes) of one regime. WBMM is read as the authors run it in
each pass: the cached WBMM-C (``wbmmc{w}``, M built once) at ``fwd``, as their inference
path does, and WBMM-NC (``wbmm{w}``, M rebuilt each call, which training needs) at
``train``.

1. **W-C1** "WBMM with 14x14 windows outperforms 5x5 depthwise convolution in speed":
   per cell, ``log10 t(WBMM-14) - log10 t(dw5)`` over the blocks, ``less``. Every p is
   two-sided (the verdict rule needs it to contradict); with Holm over 6 cells, 8 blocks
   are the fewest that can decide (exact sign-flip p >= 2 / 2^blocks).
2. **W-C1, same support** (the second reading): WBMM-14 against the depthwise conv of the
   same 27x27 support, ``log10 t(WBMM-14) - log10 t(dw27)``, ``less``, its own family.
3. **W-C2** "WBMM's throughput improves with larger windows, opposite to depthwise
   convolution": per block, the OLS slope of log t on log w (WBMM) and of log t on log k
   (depthwise); per cell, the WBMM slope ``less`` than 0 and the depthwise slope
   ``greater`` than 0, each a family. Its second reading (research note §7): the slope of
   log(t(WBMM-w) / t(dw(2w-1))) on log w, ``less`` than 0: WBMM gains on the depthwise
   conv of the same support as the window grows.
4. **W-C4** LKA's crossover: per cell with ``lka{k}`` and ``dw{k}`` timed (CUDA iGEMM
   only), ``log10 t(lka_k) - log10 t(dw_k)`` at the largest such k over the blocks,
   ``less`` on maps <= 14 px and ``greater`` on maps >= 112 px (maps between are not
   tested); "not run" when the run timed no CUDA block, missing when it did without
   ``lka{k}``.
5. The accuracy proxy (``kind=proxy`` trials, space ``proxy``): each mixer read at its
   best learning rate on validation images; WBMM w within 1 pp of the same-support
   depthwise ``2w - 1`` (TOST over seeds), and no worse than it and than dw5 by more than
   1 pp (non-inferiority); missing without such trials.
6. Not run: the speed claims on a GPU (when the run timed no CUDA block) and on edge
   devices (always), on CPU at batch >= 32 (when the run's CPU blocks are all smaller),
   and ImageNet / COCO / ADE20K (always).

Preconditions: every timing claim needs the blocks to have run one at a time (the run's
request); every proxy comparison needs both mixers tuned over the same number of learning
rates (at least ``MIN_TUNED_LRS``) and each above chance.

The operators compute different functions at different MAC counts: WBMM w is a
block-local (2w-1)^2 kernel plus the identity at w^2 MACs per output, dw k a sliding k x k
kernel at k^2 (wbmm14: 196, 7.84x dw5's 25; dw27: 729, 3.72x wbmm14's). Each speed claim's
note says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from matplotlib.figure import Figure

from raystudy import Analysis, Claim, RunResults, Table, claims
from raystudy.algorithms import stats

PAPER_WINDOW = 14
"""The abstract's window: "WBMM with 14x14 windows"."""
BASE_KERNEL = 5
"""The abstract's baseline: "5x5 depthwise convolution"."""
LARGE_BATCH = 32
"""The smallest batch read as the paper's regime (the paper profile's batch). At 320x14
WBMM-14 has one window per image, so it multiplies B rows per channel by each weight
matrix: 2 rows at batch 2, the operator's worst case (building M dominates), 32 from
batch 32 on."""
DIFFERENT = ("different functions: WBMM-14 is a block-local 27x27 kernel + identity at 196 "
             "MACs per output, dw5 a sliding 5x5 at 25 (7.84x fewer)")
INPUTS = "seeded Gaussian inputs at WBMM-T-like shapes (an operator benchmark: no data set)"


def thread_words(count: int) -> str:
    """``1 torch thread``, ``4 torch threads``."""
    return f"{count} torch thread{'' if count == 1 else 's'}"


class Regime(NamedTuple):
    """What a timing claim holds for: device, batch, threads, dtype and clock."""

    device: str
    batch: int
    threads: int
    dtype: str
    clock: str

    @property
    def label(self) -> str:
        """Short words for a family's name (``cpu, batch 2, 1 thread``)."""
        if self.device == "cuda":
            return f"cuda, batch {self.batch}"
        return f"{self.device}, batch {self.batch}, {thread_words(self.threads)}"

    @property
    def scope(self) -> str:
        """The claim's scope: the hardware and regime, and the inputs."""
        if self.device == "cuda":
            where = f"CUDA GPU, batch {self.batch}, {self.dtype}, CUDA-event timing"
        else:
            clock = "process CPU time" if self.clock == "cpu" else "wall time"
            where = (f"CPU, {thread_words(self.threads)}, batch {self.batch}, {self.dtype}, "
                     f"{clock}")
        return f"{where}; {INPUTS}"


class Cell(NamedTuple):
    """One timing cell: a regime at one pass and shape."""

    device: str
    phase: str
    batch: int
    channels: int
    size: int
    threads: int = 1
    dtype: str = "float32"
    clock: str = "cpu"

    @property
    def regime(self) -> Regime:
        return Regime(self.device, self.batch, self.threads, self.dtype, self.clock)


@dataclass
class Block:
    trial_id: str
    device: str
    phase: str
    batch: int
    channels: int
    size: int
    block: int
    ms: dict[str, float]
    threads: int = 1
    dtype: str = "float32"
    clock: str = "cpu"

    @property
    def cell(self) -> Cell:
        return Cell(self.device, self.phase, self.batch, self.channels, self.size,
                    self.threads, self.dtype, self.clock)


def cell_label(cell: Cell) -> str:
    """``cpu fwd 2x160x28x28`` (and the threads where more than one)."""
    threads = f" {cell.threads} threads" if cell.device != "cuda" and cell.threads != 1 else ""
    return f"{cell.device} {cell.phase} {cell.batch}x{cell.channels}x{cell.size}x{cell.size}" \
           f"{threads}"


def collect(results: RunResults) -> list[Block]:
    out = []
    for record in results.trials:
        rows = [r for r in record.history if "block/rep" in r]
        if not rows or not record.config:
            continue
        last, c = rows[-1], record.config
        b, ch, size = (int(v) for v in str(c["shape"]).lower().split("x"))
        out.append(Block(record.trial_id, str(c["timing.device"]), str(c["timing.phase"]),
                         b, ch, size, int(c["timing.block"]),
                         {k.removeprefix("time_ms/"): float(v) for k, v in last.items()
                          if k.startswith("time_ms/")},
                         threads=int(c.get("timing.threads", 1)),
                         dtype=str(c.get("timing.dtype", "float32")),
                         clock=str(c.get("timing.clock", "cpu"))))
    return sorted(out, key=lambda b: (b.cell, b.block))


def cells(blocks: Sequence[Block]) -> dict[Cell, list[Block]]:
    out: dict[Cell, list[Block]] = {}
    for b in blocks:
        out.setdefault(b.cell, []).append(b)
    return out


def regimes(by_cell: Mapping[Cell, list[Block]]) -> dict[Regime, dict[Cell, list[Block]]]:
    """The cells grouped by regime (each timing family runs within one)."""
    out: dict[Regime, dict[Cell, list[Block]]] = {}
    for cell, blocks in by_cell.items():
        out.setdefault(cell.regime, {})[cell] = blocks
    return out


def sizes(ms: dict[str, float], prefix: str) -> list[tuple[int, float]]:
    return sorted((int(k[len(prefix):]), v) for k, v in ms.items()
                  if k.startswith(prefix) and k[len(prefix):].isdigit())


def slope(points: Sequence[tuple[int, float]]) -> float:
    """OLS slope of log t on log size (nan with fewer than 2 sizes)."""
    if len(points) < 2:
        return math.nan
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


def wbmm_prefix(cell: Cell, blocks: Sequence[Block]) -> str:
    """``wbmmc`` (cached M) at fwd where every block timed it, else ``wbmm`` (NC)."""
    cached = cell.phase == "fwd" and bool(blocks) and all(
        any(k.startswith("wbmmc") for k in b.ms) for b in blocks)
    return "wbmmc" if cached else "wbmm"


def wbmm_reading(prefix: str) -> str:
    """Which WBMM a claim reads, in words."""
    return ("WBMM-C: M cached once, the authors' inference path" if prefix == "wbmmc" else
            "WBMM-NC: M rebuilt every call, as training needs")


def rows_per_channel(cell: Cell, window: int) -> int:
    """Matrix rows per channel that one WBMM call multiplies by M: images x windows."""
    return cell.batch * math.ceil(cell.size / window) ** 2


# ----------------------------------------------------------------------------- preconditions
def ran_one_at_a_time(request: Mapping[str, Any]) -> claims.Precondition:
    """The timing blocks ran one at a time (a single trial, in-process, or a sweep with
    ``max_concurrent`` 1), read from the run's request: timings of concurrent trials on
    shared cores (or one GPU) are not comparable."""
    statement = "the timing blocks ran one at a time (concurrent trials share the cores)"
    limit = request.get("max_concurrent")
    if request.get("in_process") or request.get("kind") == "run":
        return claims.Precondition(statement, True, "a single trial (raystudy run)")
    if limit == 1:
        return claims.Precondition(statement, True, "a sweep with max_concurrent 1")
    if not request:
        return claims.Precondition(statement, False, "the run's request (raystudy.json) "
                                   "records no concurrency")
    return claims.Precondition(statement, False, f"a sweep with max_concurrent "
                               f"{limit if limit is not None else 'unset (as many as fit)'}")


# ----------------------------------------------------------------------------- claims
def time_family(by_cell: Mapping[Cell, list[Block]], window: int, kernel: int,
                statement: str, note: Callable[[Cell, str], str],
                preconditions: Sequence[claims.Precondition] = ()) -> list[Claim]:
    """Per regime, one Holm family over its cells of ``log10 t(WBMM-window) - log10
    t(dw{kernel})`` paired over blocks, ``less``; empty where no block timed both."""
    out: list[Claim] = []
    for regime, of_regime in regimes(by_cell).items():
        tests = []
        for cell, blocks in of_regime.items():
            name = f"{wbmm_prefix(cell, blocks)}{window}"
            base = f"dw{kernel}"
            pairs = [(math.log10(b.ms[name]), math.log10(b.ms[base])) for b in blocks
                     if name in b.ms and base in b.ms]
            if not pairs:
                continue
            w, d = zip(*pairs, strict=True)
            ratio = 10 ** (np.mean(w) - np.mean(d))
            tests.append(claims.Test(
                f"{statement} at {cell_label(cell)}", f"log10 t({name}) - log10 t({base})",
                stats.paired_comparison(w, d, unit="blocks"), "less",
                note=f"geometric-mean ratio {ratio:.2f}x; {note(cell, name)}",
                preconditions=tuple(preconditions)))
        if tests:
            out += claims.holm_family(tests, f"{len(tests)} shapes x passes on "
                                      f"{regime.label}", scope=regime.scope)
    return out


def speed_claims(by_cell: Mapping[Cell, list[Block]],
                 preconditions: Sequence[claims.Precondition] = ()) -> list[Claim]:
    """W-C1: WBMM-14 against dw5 (module docstring)."""
    def note(cell: Cell, name: str) -> str:
        rows = rows_per_channel(cell, PAPER_WINDOW)
        nc = nc_ratio(by_cell[cell], BASE_KERNEL) if name.startswith("wbmmc") else ""
        windows = rows // cell.batch
        return (f"{wbmm_reading(name.rstrip('0123456789'))}{nc}; {rows} matrix rows per "
                f"channel per call ({cell.batch} images x {windows} "
                f"window{'' if windows == 1 else 's'}); {DIFFERENT}")

    out = time_family(by_cell, PAPER_WINDOW, BASE_KERNEL, f"WBMM-{PAPER_WINDOW} faster than "
                      f"dw{BASE_KERNEL}", note, preconditions)
    return out or [claims.missing_claim(
        f"WBMM-{PAPER_WINDOW} faster than dw{BASE_KERNEL}", "paired over blocks",
        "log10 t ratio", f"no block timed wbmm{PAPER_WINDOW} and dw{BASE_KERNEL}",
        scope=f"the run's timing blocks; {INPUTS}")]


def nc_ratio(blocks: Sequence[Block], kernel: int) -> str:
    """``"; WBMM-NC's ratio 85.3x"``: the non-cached operator's geometric-mean ratio."""
    pairs = [(b.ms[f"wbmm{PAPER_WINDOW}"], b.ms[f"dw{kernel}"]) for b in blocks
             if f"wbmm{PAPER_WINDOW}" in b.ms and f"dw{kernel}" in b.ms]
    if not pairs:
        return ""
    ratio = 10 ** float(np.mean([math.log10(w / d) for w, d in pairs]))
    return f" (WBMM-NC's ratio {ratio:.2f}x)"


def same_support_claims(by_cell: Mapping[Cell, list[Block]],
                        preconditions: Sequence[claims.Precondition] = ()) -> list[Claim]:
    """W-C1's second reading: WBMM-14 against dw27, the depthwise conv of the same support."""
    kernel = 2 * PAPER_WINDOW - 1
    w_macs, k_macs = PAPER_WINDOW ** 2, kernel ** 2

    def note(cell: Cell, name: str) -> str:
        return (f"{wbmm_reading(name.rstrip('0123456789'))}; same {kernel}x{kernel} support, "
                f"different work: WBMM-{PAPER_WINDOW} does {w_macs} MACs per output "
                f"(block-local, plus building M where not cached), dw{kernel} {k_macs} "
                f"(sliding), {k_macs / w_macs:.2f}x WBMM-{PAPER_WINDOW}'s")

    statement = f"WBMM-{PAPER_WINDOW} faster than the same-support dw{kernel}"
    out = time_family(by_cell, PAPER_WINDOW, kernel, statement, note, preconditions)
    return out or [claims.missing_claim(
        statement, "paired over blocks", "log10 t ratio",
        f"no block timed wbmm{PAPER_WINDOW} and dw{kernel} (timing.kernels needs {kernel})",
        scope=f"the run's timing blocks; {INPUTS}")]


def relative_slope(block: Block, prefix: str) -> float:
    """Slope of log(t(WBMM-w) / t(dw(2w-1))) on log w over the windows whose same-support
    depthwise conv the block timed (nan with fewer than 2)."""
    return slope([(w, t / block.ms[f"dw{2 * w - 1}"]) for w, t in sizes(block.ms, prefix)
                  if f"dw{2 * w - 1}" in block.ms])


SlopeReading = Callable[[Cell, Sequence[Block]], tuple[list[float], str]]
"""Per-block slopes of one cell and the words naming which WBMM they read."""


def slope_claims(by_cell: Mapping[Cell, list[Block]],
                 preconditions: Sequence[claims.Precondition] = ()) -> list[Claim]:
    """W-C2 and its relative reading: per-block slopes, one family per regime each."""
    readings: list[tuple[str, stats.Direction, str, SlopeReading]] = [
        ("WBMM time falls with the window", "less", "log t on log w", wbmm_slopes),
        ("depthwise time rises with the kernel", "greater", "log t on log k", dw_slopes),
        ("WBMM gains on the same-support depthwise conv as the window grows", "less",
         "log (t(WBMM-w) / t(dw(2w-1))) on log w", relative_slopes)]
    out: list[Claim] = []
    for name, direction, what, values in readings:
        found = False
        for regime, of_regime in regimes(by_cell).items():
            tests = []
            for cell, blocks in of_regime.items():
                s, reading = values(cell, blocks)
                if not any(math.isfinite(v) for v in s):
                    continue
                tests.append(claims.Test(
                    f"{name} at {cell_label(cell)}", f"slope of {what}{reading}",
                    stats.paired_comparison(s, [0.0] * len(s), unit="blocks"), direction,
                    preconditions=tuple(preconditions)))
            if tests:
                found = True
                out += claims.holm_family(tests, f"{len(tests)} shapes x passes on "
                                          f"{regime.label}", scope=regime.scope)
        if not found:
            out.append(claims.missing_claim(name, "per-block slope", what,
                                            "under 2 sizes timed",
                                            scope=f"the run's timing blocks; {INPUTS}"))
    return out


def wbmm_slopes(cell: Cell, blocks: Sequence[Block]) -> tuple[list[float], str]:
    """Per block, the slope of log t on log w of WBMM (C at fwd, NC at train)."""
    prefix = wbmm_prefix(cell, blocks)
    return [slope(sizes(b.ms, prefix)) for b in blocks], f" ({wbmm_short(prefix)})"


def dw_slopes(cell: Cell, blocks: Sequence[Block]) -> tuple[list[float], str]:
    """Per block, the slope of log t on log k of the depthwise conv."""
    return [slope(sizes(b.ms, "dw")) for b in blocks], ""


def relative_slopes(cell: Cell, blocks: Sequence[Block]) -> tuple[list[float], str]:
    """Per block, the slope of log(t(WBMM-w) / t(dw(2w-1))) on log w."""
    prefix = wbmm_prefix(cell, blocks)
    return [relative_slope(b, prefix) for b in blocks], f" ({wbmm_short(prefix)})"


def wbmm_short(prefix: str) -> str:
    """``WBMM-C`` or ``WBMM-NC``."""
    return "WBMM-C" if prefix == "wbmmc" else "WBMM-NC"


LKA_CLAIM = "LKA helps on small maps and hurts on large ones"
SMALL_MAP, LARGE_MAP = 14, 112  # px: where the abstract's "small" and "large" are read


def lka_claims(by_cell: Mapping[Cell, list[Block]],
               preconditions: Sequence[claims.Precondition] = ()) -> list[Claim]:
    """W-C4 (module docstring): not run without CUDA blocks, missing where CUDA blocks
    timed no ``lka{k}``."""
    effect = "log t(lka_k) - log t(dw_k)"
    why = "the iGEMM extension (CUDA source, not on PyPI)"
    if not any(cell.device == "cuda" for cell in by_cell):
        return [claims.not_run(LKA_CLAIM, "CUDA GPU with the iGEMM large-kernel extension",
                               f"this run timed no CUDA block, and {why} is not installed "
                               "here: no block timed lka")]
    if not any(k.startswith("lka") for bs in by_cell.values() for b in bs for k in b.ms):
        return [claims.missing_claim(LKA_CLAIM, "paired over blocks", effect,
                                     f"{why} is not installed: no block timed lka",
                                     scope="CUDA GPU without the iGEMM extension")]
    out: list[Claim] = []
    for regime, of_regime in regimes(by_cell).items():
        tests = []
        for cell, blocks in of_regime.items():
            if SMALL_MAP < cell.size < LARGE_MAP:
                continue
            common = [k for k, _ in sizes(blocks[0].ms, "lka")
                      if all(f"lka{k}" in b.ms and f"dw{k}" in b.ms for b in blocks)]
            if not common:
                continue
            k = max(common)
            lka_t = [math.log10(b.ms[f"lka{k}"]) for b in blocks]
            dw_t = [math.log10(b.ms[f"dw{k}"]) for b in blocks]
            small = cell.size <= SMALL_MAP
            tests.append(claims.Test(
                f"LKA-{k} {'faster' if small else 'slower'} than dw{k} at {cell_label(cell)}",
                f"log10 t(lka{k}) - log10 t(dw{k})",
                stats.paired_comparison(lka_t, dw_t, unit="blocks"),
                "less" if small else "greater",
                note=f"geometric-mean ratio {10 ** (np.mean(lka_t) - np.mean(dw_t)):.2f}x; "
                     f"small map <= {SMALL_MAP} px, large >= {LARGE_MAP} px",
                preconditions=tuple(preconditions)))
        if tests:
            out += claims.holm_family(tests, f"{len(tests)} shapes x passes on "
                                      f"{regime.label}", scope=regime.scope)
    return out or [claims.missing_claim(
        LKA_CLAIM, "paired over blocks", effect,
        f"lka was timed only at maps between {SMALL_MAP} and {LARGE_MAP} px",
        scope="CUDA GPU with the iGEMM extension")]


ABSTRACT_DEVICES = ("the abstract: WBMM 'demonstrates consistent advantages across GPU, "
                    "CPU, and edge devices without requiring specialized acceleration "
                    "kernels'")


def not_run_rows(by_cell: Mapping[Cell, list[Block]]) -> list[Claim]:
    """The paper's regimes this run did not cover, decided from its cells: a GPU (no CUDA
    block), CPU at batch >= ``LARGE_BATCH`` (CPU blocks all smaller), edge devices and the
    paper's data sets (always)."""
    rows = []
    if not any(cell.device == "cuda" for cell in by_cell):
        rows.append(claims.not_run(
            f"WBMM-{PAPER_WINDOW} faster than dw{BASE_KERNEL}, and WBMM time falling with "
            "the window, on a GPU", "CUDA GPU, batch 32 (the paper profile)",
            f"{ABSTRACT_DEVICES}; this run timed no CUDA block; on a CUDA machine `raystudy "
            "sweep large_kernel_conv --profile paper` times them (bench/wbmm_op.py --device "
            "cuda for one process)"))
    cpu_batches = sorted({cell.batch for cell in by_cell if cell.device == "cpu"})
    if cpu_batches and max(cpu_batches) < LARGE_BATCH:
        rows.append(claims.not_run(
            f"WBMM-{PAPER_WINDOW} faster than dw{BASE_KERNEL} on CPU at batch >= "
            f"{LARGE_BATCH}", f"CPU, batch >= {LARGE_BATCH}",
            f"this run's CPU blocks were at batch {', '.join(map(str, cpu_batches))} only "
            f"({min(cpu_batches)} matrix rows per channel at 320x14); space claim adds batch "
            f"{LARGE_BATCH} (raystudy sweep large_kernel_conv --profile quick --space claim)"))
    rows.append(claims.not_run(
        "WBMM's speed advantage on edge devices", "edge devices (a mobile or embedded SoC)",
        f"{ABSTRACT_DEVICES}; no edge device among this study's regimes: its blocks run on "
        "the CPU or the CUDA device of a Ray node"))
    rows += [claims.not_run(what, scope, "the real data set and GPU training at the paper's "
                            "scale are outside this study's profiles (the accuracy proxy is "
                            "raystudy's offline reading)")
             for what, scope in (
                 ("ImageNet-1K top-1 comparable to UniRepLKNet with 1.31-1.88x training "
                  "speed-up", "ImageNet-1K, WBMM-P/N/T/S trained on GPUs"),
                 ("COCO Cascade Mask R-CNN box/mask AP", "COCO, WBMM-T/S backbones on GPUs"),
                 ("ADE20K UPerNet mIoU", "ADE20K, WBMM-T/S backbones on GPUs"))]
    return rows


# ----------------------------------------------------------------------------- proxy
PROXY_MARGIN = 0.01
"""The accuracy proxy's equivalence / non-inferiority margin: 1 point of test accuracy."""
PROXY_CHANCE = 0.25
"""Chance accuracy of the relation task: 4 directions, balanced."""
ABOVE_CHANCE = 0.05
"""How far above chance a mixer's mean test accuracy must be before it is compared: a net
within 5 pp of guessing has not learnt the task, so its gap to another says nothing about
its mixer."""
MIN_TUNED_LRS = 2
"""The fewest learning rates a mixer is tuned over before it is compared: with one rate
shared by mixers whose inits differ, the comparison reads which mixer that rate suits."""


@dataclass
class ProxyArm:
    """One mixer of the accuracy proxy, read at its best learning rate on validation."""

    mixer: str
    lr: float
    """The learning rate with the highest mean validation accuracy over seeds."""
    validation: dict[float, float]
    """Mean validation accuracy per learning rate tried (nan where not reported)."""
    test: dict[int, float]
    """Seed -> test accuracy at ``lr``."""
    seeds: dict[float, int] = field(default_factory=dict)
    """Seeds per learning rate tried."""


ProxyRuns = dict[str, dict[float, dict[int, tuple[float, float]]]]
"""mixer -> learning rate -> seed -> (validation accuracy, test accuracy)."""


def proxy_runs(results: RunResults) -> ProxyRuns:
    """The last report of every ``kind=proxy`` trial: validation (nan in runs made before
    it was reported) and test accuracy."""
    out: ProxyRuns = {}
    for record in results.trials:
        c = record.config or {}
        rows = [r for r in record.history if "eval/acc" in r]
        if c.get("kind") == "proxy" and rows:
            last = rows[-1]
            out.setdefault(str(c["proxy.mixer"]), {}).setdefault(
                float(c.get("proxy.lr", 3e-3)), {})[int(c["proxy.seed"])] = (
                float(last.get("eval/val_acc", math.nan)), float(last["eval/acc"]))
    return out


def proxy_arm(mixer: str, by_lr: dict[float, dict[int, tuple[float, float]]]) -> ProxyArm:
    """``mixer`` at the learning rate with the best mean validation accuracy (the first
    learning rate where none was validated)."""
    validation = {lr: float(np.mean([v for v, _ in by_seed.values()]))
                  for lr, by_seed in sorted(by_lr.items())}
    scored = {lr: v for lr, v in validation.items() if math.isfinite(v)}
    best = max(scored, key=lambda lr: (scored[lr], -lr)) if scored else min(validation)
    return ProxyArm(mixer, best, validation, {s: t for s, (_, t) in by_lr[best].items()},
                    {lr: len(by_seed) for lr, by_seed in by_lr.items()})


def same_tuning(a: ProxyArm, b: ProxyArm) -> claims.Precondition:
    """Both mixers were tuned over the same number of learning rates, at least
    ``MIN_TUNED_LRS``."""
    def tried(arm: ProxyArm) -> str:
        lrs = ", ".join(f"{lr:g}" for lr in arm.validation)
        best = arm.validation[arm.lr]
        picked = f"best {arm.lr:g} (validation {best:.3f})" if math.isfinite(best) else \
            f"{arm.lr:g}, not validated"
        return f"{arm.mixer}: {len(arm.validation)} lr(s) ({lrs}), {picked}"

    counts = {len(a.validation), len(b.validation)}
    return claims.Precondition(
        f"{a.mixer} and {b.mixer} were each tuned over the same number of learning rates "
        f"(at least {MIN_TUNED_LRS}), chosen on validation images",
        len(counts) == 1 and min(counts) >= MIN_TUNED_LRS, f"{tried(a)}; {tried(b)}")


def learns_the_task(arm: ProxyArm) -> claims.Precondition:
    """The mixer's mean test accuracy at its best lr clears chance by ``ABOVE_CHANCE``."""
    mean = float(np.mean(list(arm.test.values())))
    return claims.Precondition(
        f"{arm.mixer} learns the relation task: mean test accuracy above chance "
        f"{PROXY_CHANCE:g} + {ABOVE_CHANCE:g}", mean > PROXY_CHANCE + ABOVE_CHANCE,
        f"{arm.mixer} {mean:.3f} over {len(arm.test)} seeds at lr {arm.lr:g}")


def proxy_scope(results: RunResults) -> str:
    """The proxy claims' scope: the generated task named a stand-in, the net and the CPU."""
    configs = [r.config for r in results.trials if (r.config or {}).get("kind") == "proxy"]
    c = configs[0] if configs else {}
    return (f"the generated relation task (two 3x3 markers 8-12 px apart on noise std "
            f"{c.get('proxy.noise', 0.4)}, 4 classes, {c.get('proxy.train_size', 1000)} "
            "training images): a stand-in for ImageNet-1K, not ImageNet; a "
            f"{c.get('proxy.channels', 16)}-channel 4-stage net, "
            f"{c.get('proxy.epochs', 6)} epochs, each mixer at its best lr on 1,000 "
            "validation images; CPU, 1 thread")


def proxy_claims(runs: ProxyRuns, scope: str = "the generated relation task (a stand-in "
                 "for ImageNet-1K, not ImageNet); CPU") -> list[Claim]:
    """WBMM w within 1 pp of depthwise 2w - 1 (same support; TOST), and the abstract's
    "comparable or better" as no worse than dw(2w - 1) and than dw5 by more than 1 pp
    (non-inferiority), each mixer at its best lr on validation, paired over seeds; missing
    without such trials. A WBMM clearly better than its baseline contradicts the
    equivalence and supports non-inferiority."""
    statement = f"accuracy proxy: WBMM within {PROXY_MARGIN * 100:g} pp of same-support depthwise"
    arms = {mixer: proxy_arm(mixer, by_lr) for mixer, by_lr in runs.items()}
    out: list[Claim] = []
    for mixer in sorted(m for m in arms if m.startswith("wbmm")):
        w = int(mixer.removeprefix("wbmm"))
        same = f"dw{2 * w - 1}"
        for base, test in ((same, "equivalence"), (same, "non_inferiority"),
                           ("dw5", "non_inferiority")):
            if base not in arms:
                continue
            arm, other = arms[mixer], arms[base]
            seeds = sorted(set(arm.test) & set(other.test))
            if not seeds:
                continue
            a, b = [arm.test[s] for s in seeds], [other.test[s] for s in seeds]
            effect = f"eval/acc: {mixer} - {base}"
            gates = (same_tuning(arm, other), learns_the_task(arm), learns_the_task(other))
            note = f"test accuracy at each mixer's best lr: {mixer} {arm.lr:g}, {base} " \
                   f"{other.lr:g}"
            if test == "equivalence":
                out.append(claims.equivalence_claim(
                    f"accuracy proxy: {mixer} within {PROXY_MARGIN * 100:g} pp of {base} "
                    "(same support)", effect, stats.equivalence(a, b, PROXY_MARGIN),
                    PROXY_MARGIN, note, scope=scope, preconditions=gates))
            else:
                out.append(claims.paired_claim(
                    f"accuracy proxy: {mixer} no worse than {base} by {PROXY_MARGIN * 100:g} pp",
                    effect, stats.non_inferiority(a, b, PROXY_MARGIN), "greater", note,
                    margin=PROXY_MARGIN, scope=scope, preconditions=gates))
    return out or [claims.missing_claim(statement, "paired over seeds", "eval/acc",
                                        "no kind=proxy trials (space proxy)", scope=scope)]


def proxy_table(runs: ProxyRuns) -> Table:
    rows = []
    for mixer, by_lr in sorted(runs.items()):
        best = proxy_arm(mixer, by_lr).lr
        for lr, by_seed in sorted(by_lr.items()):
            val = [v for v, _ in by_seed.values()]
            test = [t for _, t in by_seed.values()]
            lo, hi = stats.bootstrap_mean_ci(test)
            rows.append([mixer, f"{lr:g}", "yes" if lr == best else "", len(by_seed),
                         f"{np.mean(val):.4f}", f"{np.mean(test):.4f}",
                         f"[{lo:.3f}, {hi:.3f}]"])
    return Table("Accuracy proxy: accuracy after the last epoch per mixer and learning rate",
                 ["mixer", "lr", "chosen", "seeds", "validation mean", "test mean",
                  "test 95 % CI"], rows,
                 note="the relation task (proxy.py): direction from a bright to a dark marker "
                      "8-12 px away, 4 classes, chance 0.25; each mixer's lr is chosen on 1,000 "
                      "validation images (drawn apart from the training and test sets), the "
                      "claims read the test accuracy at it")


# ----------------------------------------------------------------------------- tables
def time_table(by_cell: Mapping[Cell, list[Block]]) -> Table:
    names = list(dict.fromkeys(k for bs in by_cell.values() for b in bs for k in b.ms))
    rows = []
    for cell, blocks in by_cell.items():
        med = {k: float(np.median([b.ms[k] for b in blocks if k in b.ms]))
               for k in names if any(k in b.ms for b in blocks)}
        rows.append([cell_label(cell), len(blocks), rows_per_channel(cell, PAPER_WINDOW),
                     *(f"{med[k]:.3f} ({med[k] / med['dw5']:.2f})" if k in med and "dw5" in med
                       else "-" for k in names)])
    return Table("Median ms per op over blocks (ratio to dw5)",
                 ["cell", "blocks", f"rows/channel at w={PAPER_WINDOW}", *names], rows,
                 note="each block: the median of its interleaved repetitions; wbmm = NC (M "
                      "rebuilt per call), wbmmc = C (M cached; inference only, the claims' "
                      "reading at fwd); rows/channel: the matrix rows one WBMM-14 call "
                      "multiplies by each channel's M (images x windows); figures from a "
                      "shared 2-core machine")


def time_figure(by_cell: Mapping[Cell, list[Block]], path: Path) -> bool:
    if not by_cell:
        return False
    fig = Figure(figsize=(4 * len(by_cell), 3.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(by_cell)))
    for ax, (cell, blocks) in zip(axes, by_cell.items(), strict=True):
        for prefix, label in (("dw", "depthwise k"), ("wbmm", "WBMM-NC w"),
                              ("wbmmc", "WBMM-C w")):
            pts: dict[int, list[float]] = {}
            for b in blocks:
                for s, v in sizes(b.ms, prefix):
                    pts.setdefault(s, []).append(v)
            if pts:
                xs = sorted(pts)
                ax.plot(xs, [np.median(pts[s]) for s in xs], marker="o", label=label)
        ax.set(xscale="log", yscale="log", xlabel="k or w", ylabel="ms", title=cell_label(cell))
    axes[0].legend(fontsize=8)
    fig.savefig(path, dpi=110)
    return True


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    """Claims W-C1 (and its same-support reading), W-C2 (and its relative reading), W-C4,
    the proxy, the not-run rows, the time table and the time-vs-size figure (module
    docstring)."""
    blocks, runs = collect(results), proxy_runs(results)
    proxy_tables = [proxy_table(runs)] if runs else []
    proxy_rows = proxy_claims(runs, proxy_scope(results))
    by_cell = cells(blocks)
    if not blocks:
        return Analysis(notes=["no timing block reported"], tables=proxy_tables, claims=[
            claims.missing_claim(f"WBMM-{PAPER_WINDOW} faster than dw{BASE_KERNEL}",
                                 "paired over blocks", "-", "no timing block reported",
                                 scope=f"no timing block in this run; {INPUTS}"),
            *proxy_rows, *not_run_rows(by_cell)])
    gate = (ran_one_at_a_time(results.request),)
    figures = []
    if time_figure(by_cell, figures_dir / "time_vs_size.png"):
        figures.append(("Median ms vs kernel size / window per cell",
                        figures_dir / "time_vs_size.png"))
    notes = [DIFFERENT, "timings from a shared 2-core machine, one trial at a time; each "
             "regime (device, batch, threads) is its own Holm family and scope; at fwd WBMM "
             "is read cached (WBMM-C, the authors' inference path), at train non-cached "
             "(WBMM-NC)"]
    summary = {cell_label(c): {k: float(np.median([b.ms[k] for b in bs if k in b.ms]))
                               for k in bs[0].ms} for c, bs in by_cell.items()}
    return Analysis(tables=[time_table(by_cell), *proxy_tables], figures=figures,
                    summary=summary, notes=notes,
                    claims=[*speed_claims(by_cell, gate), *same_support_claims(by_cell, gate),
                            *slope_claims(by_cell, gate), *lka_claims(by_cell, gate),
                            *proxy_rows, *not_run_rows(by_cell)])
