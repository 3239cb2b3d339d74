"""WBMM: windowed batch matrix multiplication (Song et al., ICML 2026; code wansong-s/WBMM).

Per window of ``d = wh * ww`` positions, with the relative-position index (Eq. 6-7)
``I[p, q] = (ph - qh + wh - 1) (2 ww - 1) + (pw - qw + ww - 1)`` and the table
``R (C, (2wh - 1)(2ww - 1))``: ``M = R[:, I]`` (C, d, d) and ``Y = X M + X`` (Algorithm 1),
a batched matmul over the channels. This equals a per-window depthwise cross-correlation
with ``R.view(C, 1, 2wh - 1, 2ww - 1)`` zero-padded at the *window* border, plus the
identity (``reference.windowed_conv``). WBMM-NC rebuilds ``M`` every call (training);
WBMM-C caches it (inference).
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Window = int | tuple[int, int]


def as_window(window: Window) -> tuple[int, int]:
    wh, ww = (window, window) if isinstance(window, int) else tuple(window)
    if wh < 1 or ww < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    return int(wh), int(ww)


def table_size(window: Window) -> int:
    wh, ww = as_window(window)
    return (2 * wh - 1) * (2 * ww - 1)


@functools.lru_cache(maxsize=64)
def _index(wh: int, ww: int) -> Tensor:
    h = torch.arange(wh).repeat_interleave(ww)  # raster t = h * ww + w
    w = torch.arange(ww).repeat(wh)
    return (h[:, None] - h[None, :] + wh - 1) * (2 * ww - 1) + (w[:, None] - w[None, :] + ww - 1)


def relative_position_index(window: Window) -> Tensor:
    """``I (d, d)``, long: ``I[p, q]`` indexes the table entry linking input p to output q."""
    return _index(*as_window(window))


def weight_matrix(table: Tensor, window: Window) -> Tensor:
    """``M = R[:, I]`` ``(C, d, d)`` (differentiable in the table: a scatter-add backward)."""
    wh, ww = as_window(window)
    d = wh * ww
    if table.shape[-1] != table_size((wh, ww)):
        raise ValueError(f"table has {table.shape[-1]} entries per channel; window "
                         f"{wh}x{ww} needs {table_size((wh, ww))}")
    index = relative_position_index((wh, ww)).to(table.device)
    return table.index_select(1, index.flatten()).view(table.shape[0], d, d)


def wbmm(x: Tensor, table: Tensor, window: Window, identity: bool = True,
         matrix: Tensor | None = None) -> Tensor:
    """WBMM of ``x (B, C, H, W)`` with ``table (C, (2wh-1)(2ww-1))``: ``Y = X M (+ X)``.

    Maps that are not multiples of the window are zero-padded bottom/right and cropped (the
    authors' dense-prediction backbone); one window covering the map skips the permutes.
    ``matrix`` is a cached ``M`` (WBMM-C); without it ``M`` is rebuilt (WBMM-NC).
    """
    wh, ww = as_window(window)
    B, C, H, W = x.shape
    M = weight_matrix(table, (wh, ww)) if matrix is None else matrix
    if M.shape != (C, wh * ww, wh * ww):
        raise ValueError(f"weight matrix {tuple(M.shape)} does not fit C={C}, window {wh}x{ww}")
    ph, pw = (-H) % wh, (-W) % ww
    xp = F.pad(x, (0, pw, 0, ph)) if ph or pw else x
    Hp, Wp = H + ph, W + pw
    nh, nw = Hp // wh, Wp // ww
    d = wh * ww
    if nh == nw == 1:  # single-window fast path
        xw = xp.reshape(B, C, d).transpose(0, 1)  # (C, B, d)
        yw = torch.bmm(xw, M)
        if identity:
            yw = yw + xw
        y = yw.transpose(0, 1).reshape(B, C, Hp, Wp)
    else:
        xw = (xp.reshape(B, C, nh, wh, nw, ww).permute(1, 0, 2, 4, 3, 5)
              .reshape(C, B * nh * nw, d))
        yw = torch.bmm(xw, M)
        if identity:
            yw = yw + xw
        y = (yw.reshape(C, B, nh, nw, wh, ww).permute(1, 0, 2, 4, 3, 5)
             .reshape(B, C, Hp, Wp))
    return y[:, :, :H, :W] if ph or pw else y


def table_from_kernel(kernel: Tensor, window: Window) -> Tensor:
    """A depthwise kernel ``(C, 1, k, k)`` or ``(C, kh, kw)`` as a table: centred in the
    ``(2wh-1) x (2ww-1)`` grid (odd k); even k follows ``F.conv2d(padding="same")`` (the
    extra tap on the top/left). Needs ``k <= 2w - 1``."""
    wh, ww = as_window(window)
    k = kernel.reshape(kernel.shape[0], kernel.shape[-2], kernel.shape[-1])
    kh, kw = k.shape[-2:]
    if kh > 2 * wh - 1 or kw > 2 * ww - 1:
        raise ValueError(f"kernel {kh}x{kw} does not fit window {wh}x{ww} (k <= 2w - 1)")
    # tap (i, j) of a 'same' conv reads offset i - (kh - 1) // 2; table centre is wh - 1
    top, left = wh - 1 - (kh - 1) // 2, ww - 1 - (kw - 1) // 2
    grid = k.new_zeros(k.shape[0], 2 * wh - 1, 2 * ww - 1)
    grid[:, top:top + kh, left:left + kw] = k
    return grid.reshape(k.shape[0], -1)


def kernel_from_table(table: Tensor, window: Window) -> Tensor:
    """The table as a depthwise kernel ``(C, 1, 2wh-1, 2ww-1)`` (``F.conv2d``'s layout)."""
    wh, ww = as_window(window)
    return table.reshape(table.shape[0], 1, 2 * wh - 1, 2 * ww - 1)


class WBMM(nn.Module):
    """WBMM with the table ``R`` as a parameter (trunc_normal std 0.02, as the authors).

    ``cache()`` freezes ``M`` for inference (WBMM-C); ``train()`` drops it (WBMM-NC).
    """

    def __init__(self, channels: int, window: Window = 7, identity: bool = True) -> None:
        super().__init__()
        self.window = as_window(window)
        self.identity = identity
        self.table = nn.Parameter(torch.empty(channels, table_size(self.window)))
        nn.init.trunc_normal_(self.table, std=0.02)
        self._matrix: Tensor | None = None

    def cache(self) -> WBMM:
        self.eval()
        with torch.no_grad():
            self._matrix = weight_matrix(self.table, self.window).contiguous()
        return self

    def train(self, mode: bool = True) -> WBMM:
        if mode:
            self._matrix = None
        return super().train(mode)

    @property
    def cached(self) -> bool:
        return self._matrix is not None

    def forward(self, x: Tensor) -> Tensor:
        return wbmm(x, self.table, self.window, self.identity, matrix=self._matrix)

    def extra_repr(self) -> str:
        return f"channels={self.table.shape[0]}, window={self.window}, cached={self.cached}"


def macs(name: str, shape: tuple[int, int, int, int], size: int) -> int:
    """Multiply-accumulates of one forward: WBMM ``w`` does d = w^2 per output element (on
    the padded map), a ``k x k`` depthwise conv k^2."""
    B, C, H, W = shape
    if name == "wbmm":
        return B * C * math.ceil(H / size) * size * math.ceil(W / size) * size * size * size
    return B * C * H * W * size * size
