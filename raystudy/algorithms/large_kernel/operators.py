"""The timed candidates at one shape: ``dw{k}``, ``wbmm{w}`` (NC) and ``wbmmc{w}`` (C),
``unfold{k}``, ``fft{k}``, ``lka{k}``; each a no-argument closure for ``timing.interleaved``.

Passes: ``fwd`` (inference, no grad) and ``train`` (forward + backward of a sum loss; in
WBMM-NC that includes the ``index_select`` into M and its scatter-add backward). WBMM-C
is inference only. ``check`` is the gate run before timing: wbmm against the per-window
``F.conv2d`` reference.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from .baselines import depthwise, fft_depthwise, lka, lka_available, unfold_depthwise
from .reference import windowed_conv
from .wbmm import kernel_from_table, table_size, wbmm, weight_matrix


def check(shape: tuple[int, int, int, int], window: int, dtype: torch.dtype = torch.float32,
          device: str = "cpu", seed: int = 0) -> float:
    """max |wbmm - windowed_conv| / (1 + max |ref|) on seeded inputs at this shape."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g).to(device, dtype)
    R = (0.02 * torch.randn(shape[1], table_size(window), generator=g)).to(device, dtype)
    with torch.no_grad():
        ref = windowed_conv(x, kernel_from_table(R, window), window)
        err = (wbmm(x, R, window) - ref).abs().max()
    return float(err / (1 + ref.abs().max()))


def candidates(shape: tuple[int, int, int, int], windows: tuple[int, ...],
               kernels: tuple[int, ...], phase: str = "fwd", device: str = "cpu",
               dtype: torch.dtype = torch.float32, seed: int = 0, cached: bool = True,
               unfold_max: int = 0, fft: tuple[int, ...] = (), lka_kernels: tuple[int, ...] = ()
               ) -> dict[str, Callable[[], object]]:
    """name -> closure; windows over twice the map are left out (w = 14 pads 7 to 14)."""
    B, C, H, W = shape
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g).to(device, dtype)
    train = phase == "train"
    if train:
        x.requires_grad_(True)

    def run(op: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], weight: torch.Tensor
            ) -> Callable[[], object]:
        if train:
            weight.requires_grad_(True)

            def step() -> object:
                x.grad = weight.grad = None
                op(x, weight).sum().backward()
                return None
            return step

        def forward() -> object:
            with torch.no_grad():
                return op(x, weight)
        return forward

    out: dict[str, Callable[[], object]] = {}
    for k in kernels:
        out[f"dw{k}"] = run(depthwise, torch.randn(C, 1, k, k, generator=g).to(device, dtype))
    for w in (w for w in windows if w <= 2 * max(H, W)):
        table = (0.02 * torch.randn(C, table_size(w), generator=g)).to(device, dtype)
        out[f"wbmm{w}"] = run(functools.partial(_wbmm_nc, window=w), table.clone())
        if cached and not train:
            M = weight_matrix(table, w).contiguous()
            out[f"wbmmc{w}"] = run(functools.partial(_wbmm_c, window=w, matrix=M), table)
    for k in (k for k in kernels if k <= unfold_max):
        out[f"unfold{k}"] = run(unfold_depthwise,
                                torch.randn(C, 1, k, k, generator=g).to(device, dtype))
    for k in fft:
        out[f"fft{k}"] = run(fft_depthwise, torch.randn(C, 1, k, k, generator=g).to(device, dtype))
    if lka_kernels and lka_available() and device.startswith("cuda"):
        for k in lka_kernels:
            out[f"lka{k}"] = run(lka, torch.randn(C, 1, k, k, generator=g).to(device, dtype))
    return out


def _wbmm_nc(x: torch.Tensor, table: torch.Tensor, window: int) -> torch.Tensor:
    return wbmm(x, table, window)


def _wbmm_c(x: torch.Tensor, table: torch.Tensor, window: int, matrix: torch.Tensor
            ) -> torch.Tensor:
    return wbmm(x, table, window, matrix=matrix)


def size_of(name: str) -> tuple[str, int]:
    """``"wbmmc14"`` -> ``("wbmm", 14)``; ``"dw5"`` -> ``("dw", 5)``."""
    head = name.rstrip("0123456789")
    return ("wbmm" if head == "wbmmc" else head), int(name[len(head):])
