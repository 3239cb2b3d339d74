"""Time WBMM against depthwise convolution, all candidates side by side in one process.

Usage:
    .venv/bin/python bench/wbmm_op.py --threads 1 --clock cpu --reps 9     # CPU
    .venv/bin/python bench/wbmm_op.py --device cuda --reps 30               # a CUDA machine

Candidates (issue 27): depthwise ``dw{k}`` (F.conv2d, groups=C) for k in
{3,5,7,9,13,17,21,27,31}; ``wbmm{w}`` (NC: M rebuilt per call) and ``wbmmc{w}`` (C: M
cached, inference only) for w in {2,4,7,14,28} (w <= the map); ``unfold{k}`` (F.unfold
gather) for k <= 13; ``fft{k}``; ``lka{k}`` where the iGEMM extension imports (else one
SKIP line). Shapes: WBMM-T's stages (160x28x28, 320x14x14, 640x7x7; w=14 pads 7 to 14) and
large maps (80x56x56, 64x112x112, 64x224x224); passes fwd and train (forward + backward).
Every shape checks wbmm against the per-window conv2d reference before timing. Repetitions
are interleaved in a shuffled order; the median ms per op is reported with GMAC/s, the
ratio to dw5 and to the depthwise conv of the same support (2w-1).

The operators compute different functions: WBMM is a block-local (2w-1)^2 kernel plus the
identity, a depthwise conv slides k x k over the whole map; WBMM w does w^2 MACs per
output, dw k k^2 (wbmm14 does 7.84x the MACs of dw5).

Targets, each for the hardware it applies to (PASS/FAIL, or SKIP for other hardware):
* every device: wbmm14 time <= 1.0x dw5 (the abstract's speed claim), per shape and pass;
* every device: wbmm14 / wbmm7 <= 1.0 (throughput improving with the window);
* every device: dw31 / dw5 > 1 (depthwise slowing with the kernel);
* CUDA with LKA: lka{k}/dw{k} < 1 at maps <= 14 px and > 1 at maps >= 112 px.
Figures from a shared machine vary run to run; read the ratios, not single ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch
from _hardware import describe, verdict

from raystudy.algorithms.large_kernel import (
    LKA_MISSING,
    candidates,
    check,
    interleaved,
    lka_available,
    macs,
    size_of,
)

KERNELS = (3, 5, 7, 9, 13, 17, 21, 27, 31)
WINDOWS = (2, 4, 7, 14, 28)
SHAPES = "2x160x28,2x320x14,2x640x7,2x80x56,2x64x112,2x64x224"


def parse_shapes(text: str) -> list[tuple[int, int, int, int]]:
    out = []
    for part in text.split(","):
        b, c, s = (int(v) for v in part.split("x"))
        out.append((b, c, s, s))
    return out


def measure(shape, phase, device, args) -> dict[str, float]:
    err = max(check(shape, w, device=device) for w in args.windows if w <= 2 * shape[2])
    if err > args.tolerance:
        sys.exit(f"FAIL [{device}] {shape}: wbmm differs from the windowed reference by "
                 f"{err:.2e} > {args.tolerance:g}")
    fns = candidates(shape, tuple(args.windows), tuple(args.kernels), phase, device,
                     unfold_max=args.unfold_max, fft=tuple(args.fft), lka_kernels=KERNELS)
    times = interleaved(fns, args.reps, args.warmup, device, args.clock, seed=args.seed)
    return {k: statistics.median(v) for k, v in times.items()}


def table(shape, phase, device, med) -> None:
    print(f"\n[{device}] {phase} B={shape[0]} C={shape[1]} {shape[2]}x{shape[3]}  "
          f"(median ms over interleaved reps)")
    print(f"  {'candidate':10s} {'ms':>9s} {'GMAC/s':>8s} {'/dw5':>7s} {'/dw(2w-1)':>10s}")
    for name, ms in med.items():
        kind, size = size_of(name)
        mac = macs("wbmm" if kind == "wbmm" else "dw", shape, size) * (3 if phase == "train" else 1)
        same = med.get(f"dw{2 * size - 1}") if kind == "wbmm" else None
        print(f"  {name:10s} {ms:9.3f} {mac / ms / 1e6:8.2f} {ms / med['dw5']:7.2f} "
              f"{(f'{ms / same:10.2f}' if same else '         -')}")


def targets(shape, phase, device, med) -> list[bool]:
    results = []
    here = f"{phase} {shape[1]}x{shape[2]}x{shape[3]}"
    rows = [("wbmm14 <= 1.0x dw5", "wbmm14", "dw5", lambda r: r <= 1.0),
            ("wbmm14 / wbmm7 <= 1.0", "wbmm14", "wbmm7", lambda r: r <= 1.0),
            ("dw31 / dw5 > 1", "dw31", "dw5", lambda r: r > 1.0)]
    for what, a, b, ok in rows:
        if a in med and b in med:
            r = med[a] / med[b]
            results.append(ok(r))
            print(f"{verdict(True, ok(r))} [{device}] {here}: {what}: {r:.2f} "
                  f"(on every device)")
    lka = [k for k in KERNELS if f"lka{k}" in med]
    for k in lka:
        r = med[f"lka{k}"] / med[f"dw{k}"]
        small, large = shape[2] <= 14, shape[2] >= 112
        if small or large:
            ok_ = r < 1 if small else r > 1
            results.append(ok_)
            print(f"{verdict(True, ok_)} [{device}] {here}: lka{k}/dw{k} "
                  f"{'< 1' if small else '> 1'}: {r:.2f} (CUDA with the iGEMM extension)")
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--clock", default="cpu", choices=["cpu", "wall"])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pass", dest="phase", default="both", choices=["fwd", "train", "both"])
    p.add_argument("--shapes", default=SHAPES, help="BxCxS,...")
    p.add_argument("--kernels", type=lambda s: [int(v) for v in s.split(",")], default=KERNELS)
    p.add_argument("--windows", type=lambda s: [int(v) for v in s.split(",")], default=WINDOWS)
    p.add_argument("--unfold-max", type=int, default=13)
    p.add_argument("--fft", type=lambda s: [int(v) for v in s.split(",") if v],
                   default=[31])
    p.add_argument("--tolerance", type=float, default=1e-5)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("wbmm_op.py: --device cuda but torch sees no CUDA device")
    print(describe())
    print("figures vary with the machine's load; candidates are interleaved so drift falls "
          "on all alike")
    if not lka_available() or args.device != "cuda":
        print(f"SKIP [{args.device}] lka: {LKA_MISSING if not lka_available() else 'CUDA only'}")
    results: list[bool] = []
    phases = ["fwd", "train"] if args.phase == "both" else [args.phase]
    for shape in parse_shapes(args.shapes):
        for phase in phases:
            med = measure(shape, phase, args.device, args)
            table(shape, phase, args.device, med)
            results += targets(shape, phase, args.device, med)
    print("\nALL PASS" if all(results) else "\nSOME TARGETS FAILED")


if __name__ == "__main__":
    main()
