"""The timing study's report: claims, tables and a figure from the timing blocks.

Each trial is one block (``timing.block``) at one cell (device, pass, shape); its last
report holds the block's median ms per candidate (``time_ms/NAME``). The block is the unit
of every paired test (candidates of one block ran interleaved on the same inputs):

1. **W-C1** "WBMM with 14x14 windows outperforms 5x5 depthwise convolution in speed":
   per cell, ``log10 t(wbmm14) - log10 t(dw5)`` over the blocks, one-sided ``less``; Holm
   across the cells (shapes x passes) of a device. Every p is two-sided (the verdict rule
   needs it to contradict); with Holm over 6 cells, 8 blocks are the fewest that can
   decide (exact sign-flip p >= 2 / 2^blocks).
2. **W-C2** "WBMM's throughput improves with larger windows, opposite to depthwise
   convolution": per block, the OLS slope of log t on log w (WBMM NC) and of log t on log k
   (depthwise); per cell, the WBMM slope ``less`` than 0 and the depthwise slope
   ``greater`` than 0, each a Holm family across cells.
3. **W-C4** LKA's crossover: per cell with ``lka{k}`` and ``dw{k}`` timed (CUDA iGEMM
   only), ``log10 t(lka_k) - log10 t(dw_k)`` at the largest such k over the blocks,
   ``less`` on maps <= 14 px and ``greater`` on maps >= 112 px (maps between are not
   tested), one Holm family; missing where no block timed ``lka{k}``.
4. The accuracy proxy (``kind=proxy`` trials, space ``proxy``): WBMM w within 1 pp of the
   same-support depthwise ``2w - 1`` (TOST over seeds), and no worse than it and than dw5
   by more than 1 pp (non-inferiority, the abstract's "comparable or better"); missing
   without such trials.
5. ImageNet / COCO / ADE20K accuracy: missing claims (not run).

The operators compute different functions at different MAC counts: WBMM w is a
block-local (2w-1)^2 kernel plus the identity at w^2 MACs per output, dw k a sliding k x k
kernel at k^2 (wbmm14: 196, 7.84x dw5's 25). Each speed claim's note says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from raystudy import Analysis, Claim, RunResults, Table, claims
from raystudy.algorithms import stats

DIFFERENT = ("different functions: WBMM-14 is a block-local 27x27 kernel + identity at 196 "
             "MACs per output, dw5 a sliding 5x5 at 25 (7.84x fewer)")


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

    @property
    def cell(self) -> tuple[str, str, int, int, int]:
        return (self.device, self.phase, self.batch, self.channels, self.size)


def cell_label(cell: tuple[str, str, int, int, int]) -> str:
    device, phase, b, c, s = cell
    return f"{device} {phase} {b}x{c}x{s}x{s}"


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
                          if k.startswith("time_ms/")}))
    return sorted(out, key=lambda b: (b.cell, b.block))


def cells(blocks: Sequence[Block]) -> dict[tuple[str, str, int, int, int], list[Block]]:
    out: dict[tuple[str, str, int, int, int], list[Block]] = {}
    for b in blocks:
        out.setdefault(b.cell, []).append(b)
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


# ----------------------------------------------------------------------------- claims
def speed_claims(by_cell: dict) -> list[Claim]:
    out: list[Claim] = []
    for device in sorted({c[0] for c in by_cell}):
        tests = []
        for cell, blocks in by_cell.items():
            if cell[0] != device:
                continue
            pairs = [(math.log10(b.ms["wbmm14"]), math.log10(b.ms["dw5"])) for b in blocks
                     if "wbmm14" in b.ms and "dw5" in b.ms]
            if not pairs:
                continue
            w, d = zip(*pairs, strict=True)
            ratio = 10 ** (np.mean(w) - np.mean(d))
            tests.append(claims.Test(
                f"WBMM-14 faster than dw5 at {cell_label(cell)}",
                "log10 t(wbmm14) - log10 t(dw5)",
                stats.paired_comparison(w, d, unit="blocks"), "less",
                note=f"geometric-mean ratio {ratio:.2f}x; {DIFFERENT}"))
        if tests:
            out += claims.holm_family(tests, f"{len(tests)} shapes x passes on {device}")
    if not out:
        out.append(claims.missing_claim("WBMM-14 faster than dw5", "paired over blocks",
                                        "log10 t ratio", "no block timed wbmm14 and dw5"))
    return out


def slope_claims(by_cell: dict) -> list[Claim]:
    out: list[Claim] = []
    for prefix, name, direction, what in (
            ("wbmm", "WBMM time falls with the window", "less", "log t on log w (WBMM NC)"),
            ("dw", "depthwise time rises with the kernel", "greater", "log t on log k")):
        tests = []
        for cell, blocks in by_cell.items():
            s = [slope(sizes(b.ms, prefix)) for b in blocks]
            if not any(math.isfinite(v) for v in s):
                continue
            tests.append(claims.Test(f"{name} at {cell_label(cell)}", f"slope of {what}",
                                     stats.paired_comparison(s, [0.0] * len(s), unit="blocks"),
                                     direction))
        out += (claims.holm_family(tests, f"{len(tests)} shapes x passes") if tests else
                [claims.missing_claim(name, "per-block slope", what, "under 2 sizes timed")])
    return out


LKA_CLAIM = "LKA helps on small maps and hurts on large ones"
SMALL_MAP, LARGE_MAP = 14, 112  # px: where the abstract's "small" and "large" are read


def lka_claims(by_cell: dict) -> list[Claim]:
    """W-C4 (module docstring): missing where no block timed ``lka{k}``."""
    if not any(k.startswith("lka") for bs in by_cell.values() for b in bs for k in b.ms):
        return [claims.missing_claim(
            LKA_CLAIM, "paired over blocks", "log t(lka_k) - log t(dw_k)", "the iGEMM "
            "extension (CUDA source, not on PyPI) is not installed: no block timed lka")]
    tests = []
    for cell, blocks in by_cell.items():
        if SMALL_MAP < cell[4] < LARGE_MAP:
            continue
        common = [k for k, _ in sizes(blocks[0].ms, "lka")
                  if all(f"lka{k}" in b.ms and f"dw{k}" in b.ms for b in blocks)]
        if not common:
            continue
        k = max(common)
        lka_t = [math.log10(b.ms[f"lka{k}"]) for b in blocks]
        dw_t = [math.log10(b.ms[f"dw{k}"]) for b in blocks]
        small = cell[4] <= SMALL_MAP
        tests.append(claims.Test(
            f"LKA-{k} {'faster' if small else 'slower'} than dw{k} at {cell_label(cell)}",
            f"log10 t(lka{k}) - log10 t(dw{k})",
            stats.paired_comparison(lka_t, dw_t, unit="blocks"),
            "less" if small else "greater",
            note=f"geometric-mean ratio {10 ** (np.mean(lka_t) - np.mean(dw_t)):.2f}x; "
                 f"small map <= {SMALL_MAP} px, large >= {LARGE_MAP} px"))
    if not tests:
        return [claims.missing_claim(
            LKA_CLAIM, "paired over blocks", "log t(lka_k) - log t(dw_k)",
            f"lka was timed only at maps between {SMALL_MAP} and {LARGE_MAP} px")]
    return claims.holm_family(tests, f"{len(tests)} shapes x passes")


def missing_claims() -> list[Claim]:
    return [claims.missing_claim(what, "-", "-", "not run by this study's profiles (the "
                                 "data and GPUs they need are out of scope offline)")
            for what in ("ImageNet-1K top-1 comparable to UniRepLKNet with 1.31-1.88x "
                         "training speed-up", "COCO Cascade Mask R-CNN box/mask AP",
                         "ADE20K UPerNet mIoU")]


# ----------------------------------------------------------------------------- proxy
PROXY_MARGIN = 0.01
"""The accuracy proxy's equivalence / non-inferiority margin: 1 point of test accuracy."""


def proxy_runs(results: RunResults) -> dict[str, dict[int, float]]:
    """mixer -> seed -> last test accuracy of the ``kind=proxy`` trials."""
    out: dict[str, dict[int, float]] = {}
    for record in results.trials:
        c = record.config or {}
        rows = [r for r in record.history if "eval/acc" in r]
        if c.get("kind") == "proxy" and rows:
            out.setdefault(str(c["proxy.mixer"]), {})[int(c["proxy.seed"])] = \
                float(rows[-1]["eval/acc"])
    return out


def proxy_claims(runs: dict[str, dict[int, float]]) -> list[Claim]:
    """WBMM w within 1 pp of depthwise 2w - 1 (same support; TOST), and the abstract's
    "comparable or better" as no worse than dw(2w - 1) and than dw5 by more than 1 pp
    (non-inferiority), paired over seeds; missing without such trials. A WBMM clearly
    better than its baseline contradicts the equivalence and supports non-inferiority."""
    statement = f"accuracy proxy: WBMM within {PROXY_MARGIN * 100:g} pp of same-support depthwise"
    out: list[Claim] = []
    for mixer in sorted(m for m in runs if m.startswith("wbmm")):
        w = int(mixer.removeprefix("wbmm"))
        same = f"dw{2 * w - 1}"
        for base, test in ((same, "equivalence"), (same, "non_inferiority"),
                           ("dw5", "non_inferiority")):
            seeds = sorted(set(runs[mixer]) & set(runs.get(base, {})))
            if not seeds:
                continue
            a, b = [runs[mixer][s] for s in seeds], [runs[base][s] for s in seeds]
            effect = f"eval/acc: {mixer} - {base}"
            if test == "equivalence":
                out.append(claims.equivalence_claim(
                    f"accuracy proxy: {mixer} within {PROXY_MARGIN * 100:g} pp of {base} "
                    "(same support)", effect, stats.equivalence(a, b, PROXY_MARGIN),
                    PROXY_MARGIN))
            else:
                out.append(claims.paired_claim(
                    f"accuracy proxy: {mixer} no worse than {base} by {PROXY_MARGIN * 100:g} pp",
                    effect, stats.non_inferiority(a, b, PROXY_MARGIN), "greater",
                    margin=PROXY_MARGIN))
    return out or [claims.missing_claim(statement, "paired over seeds", "eval/acc",
                                        "no kind=proxy trials (space proxy)")]


def proxy_table(runs: dict[str, dict[int, float]]) -> Table:
    rows = []
    for mixer, by_seed in sorted(runs.items()):
        lo, hi = stats.bootstrap_mean_ci(list(by_seed.values()))
        rows.append([mixer, len(by_seed), f"{np.mean(list(by_seed.values())):.4f}",
                     f"[{lo:.3f}, {hi:.3f}]"])
    return Table("Accuracy proxy: test accuracy after the last epoch", ["mixer", "seeds",
                 "mean", "95 % CI"], rows, note="the relation task (proxy.py): direction "
                 "from a bright to a dark marker 8-12 px away, 4 classes, chance 0.25")


# ----------------------------------------------------------------------------- tables
def time_table(by_cell: dict) -> Table:
    names = list(dict.fromkeys(k for bs in by_cell.values() for b in bs for k in b.ms))
    rows = []
    for cell, blocks in by_cell.items():
        med = {k: float(np.median([b.ms[k] for b in blocks if k in b.ms]))
               for k in names if any(k in b.ms for b in blocks)}
        rows.append([cell_label(cell), len(blocks),
                     *(f"{med[k]:.3f} ({med[k] / med['dw5']:.2f})" if k in med and "dw5" in med
                       else "-" for k in names)])
    return Table("Median ms per op over blocks (ratio to dw5)", ["cell", "blocks", *names],
                 rows, note="each block: the median of its interleaved repetitions; "
                            "wbmmc = cached M (inference only); figures from a shared "
                            "2-core machine")


def time_figure(by_cell: dict, path: Path) -> bool:
    if not by_cell:
        return False
    fig = Figure(figsize=(4 * len(by_cell), 3.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(by_cell)))
    for ax, (cell, blocks) in zip(axes, by_cell.items(), strict=True):
        for prefix, label in (("dw", "depthwise k"), ("wbmm", "WBMM-NC w"),
                              ("wbmmc", "WBMM-C w")):
            pts = {}
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
    """Claims W-C1 (Holm per device), W-C2 (slopes), the missing ones, the time table and
    the time-vs-size figure (module docstring)."""
    blocks, runs = collect(results), proxy_runs(results)
    proxy = ([proxy_table(runs)] if runs else []), proxy_claims(runs)
    if not blocks:
        return Analysis(notes=["no timing block reported"], tables=proxy[0], claims=[
            claims.missing_claim("WBMM-14 faster than dw5", "paired over blocks", "-",
                                 "no timing block reported"), *proxy[1], *missing_claims()])
    by_cell = cells(blocks)
    figures = []
    if time_figure(by_cell, figures_dir / "time_vs_size.png"):
        figures.append(("Median ms vs kernel size / window per cell",
                        figures_dir / "time_vs_size.png"))
    notes = [DIFFERENT, "timings from a shared 2-core machine, one trial at a time; "
             "CPU and CUDA verdicts are separate families"]
    summary = {cell_label(c): {k: float(np.median([b.ms[k] for b in bs if k in b.ms]))
                               for k in bs[0].ms} for c, bs in by_cell.items()}
    return Analysis(tables=[time_table(by_cell), *proxy[0]], figures=figures,
                    summary=summary, notes=notes,
                    claims=[*speed_claims(by_cell), *slope_claims(by_cell),
                            *lka_claims(by_cell), *proxy[1], *missing_claims()])
