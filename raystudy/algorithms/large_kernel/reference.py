"""Independent references for WBMM (no relative-position index): the test oracles.

``windowed_conv``: fold the windows into the batch, ``F.conv2d(groups=C, padding=(wh-1,
ww-1))`` with the table as a ``(2wh-1) x (2ww-1)`` kernel, add the identity, unfold
(the authors' ``test_window_equals_local_large_kernel``).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from .wbmm import Window, as_window


def windowed_conv(x: Tensor, kernel: Tensor, window: Window, identity: bool = True) -> Tensor:
    """Per-window depthwise cross-correlation of ``x (B, C, H, W)`` with ``kernel (C, 1,
    2wh-1, 2ww-1)``, zero-padded at each window's border (+ x); non-multiple maps are
    zero-padded bottom/right and cropped."""
    wh, ww = as_window(window)
    B, C, H, W = x.shape
    ph, pw = (-H) % wh, (-W) % ww
    xp = F.pad(x, (0, pw, 0, ph))
    nh, nw = (H + ph) // wh, (W + pw) // ww
    folded = (xp.reshape(B, C, nh, wh, nw, ww).permute(0, 2, 4, 1, 3, 5)
              .reshape(B * nh * nw, C, wh, ww))
    y = F.conv2d(folded, kernel, padding=(wh - 1, ww - 1), groups=C)
    if identity:
        y = y + folded
    y = y.reshape(B, nh, nw, C, wh, ww).permute(0, 3, 1, 4, 2, 5).reshape(B, C, H + ph, W + pw)
    return y[:, :, :H, :W]
