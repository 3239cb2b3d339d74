"""The accuracy proxy (raystudy's reading of "comparable or better accuracy", offline):
a tiny 4-stage net whose token mixer is WBMM ``w``, a depthwise conv with the same
support (``k = 2w - 1``) or a 5x5 depthwise conv, trained from scratch on a generated
image task that needs a receptive field of about 10 px.

The task (:func:`relation_task`): a ``size x size`` map of Gaussian noise holds a bright
3x3 marker A and a dark 3x3 marker B 8-12 px away straight up, down, left or right of it;
the label is that direction (4 classes). A mixer whose support cannot span A and B within
a stage has to pass the relation through the stages' downsampling instead.

The net (:class:`ProxyNet`): a 3x3 stem, then per stage ``x + mix(x)`` (WBMM's own
identity is that residual) and ``x + pw(gelu(pw(bn(x))))``, a 2x2 stride-2 conv between
stages (28 -> 14 -> 7 -> 3 px), global average pooling and a linear head.
"""

from __future__ import annotations

import re

import numpy as np
import torch
from torch import nn

from raystudy.algorithms.large_kernel import WBMM

MIXER = re.compile(r"^(wbmm|dw)([1-9][0-9]*)$")
DIRECTIONS = ((-1, 0), (1, 0), (0, -1), (0, 1))
"""(dy, dx) of B from A per class: up, down, left, right."""


def parse_mixer(mixer: str) -> tuple[str, int]:
    """``"wbmm7"`` -> ``("wbmm", 7)``, ``"dw13"`` -> ``("dw", 13)`` (odd k); else ValueError."""
    match = MIXER.match(mixer)
    if match is None or (match[1] == "dw" and int(match[2]) % 2 == 0):
        raise ValueError(f"proxy.mixer={mixer!r}: wbmm<w> or dw<k> with k odd, e.g. wbmm7, "
                         "dw13, dw5")
    return match[1], int(match[2])


def relation_task(n: int, size: int = 28, seed: int = 0,
                  noise: float = 0.2) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` ``n x 1 x size x size`` (float32) and ``y`` ``n`` (the direction A -> B)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, noise, (n, 1, size, size)).astype(np.float32)
    y = rng.integers(0, len(DIRECTIONS), n)
    for i, (label, d) in enumerate(zip(y, rng.integers(8, 13, n), strict=True)):
        dy, dx = (int(v) * int(d) for v in DIRECTIONS[label])
        ay = rng.integers(max(1, 1 - dy), min(size - 1, size - 1 - dy))
        ax = rng.integers(max(1, 1 - dx), min(size - 1, size - 1 - dx))
        x[i, 0, ay - 1:ay + 2, ax - 1:ax + 2] += 1.0
        x[i, 0, ay + dy - 1:ay + dy + 2, ax + dx - 1:ax + dx + 2] -= 1.0
    return torch.from_numpy(x), torch.from_numpy(y)


class Depthwise(nn.Module):
    """``x + dw_k(x)``: the residual WBMM has built in."""

    def __init__(self, channels: int, k: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, k, padding=k // 2, groups=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x)


class ProxyNet(nn.Module):
    """Stem, 4 stages of (mixer, MLP), 3 downsamplings, pooled linear head (docstring)."""

    def __init__(self, mixer: str, channels: int = 16, classes: int = len(DIRECTIONS),
                 stages: int = 4) -> None:
        super().__init__()
        kind, size = parse_mixer(mixer)
        self.stem = nn.Conv2d(1, channels, 3, padding=1)
        self.mixers = nn.ModuleList(
            WBMM(channels, size) if kind == "wbmm" else Depthwise(channels, size)
            for _ in range(stages))
        self.mlps = nn.ModuleList(nn.Sequential(
            nn.BatchNorm2d(channels), nn.Conv2d(channels, 2 * channels, 1), nn.GELU(),
            nn.Conv2d(2 * channels, channels, 1)) for _ in range(stages))
        self.downs = nn.ModuleList(nn.Conv2d(channels, channels, 2, stride=2)
                                   for _ in range(stages - 1))
        self.head = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for i, (mix, mlp) in enumerate(zip(self.mixers, self.mlps, strict=True)):
            x = mix(x)
            x = x + mlp(x)
            if i < len(self.downs):
                x = self.downs[i](x)
        return self.head(x.mean(dim=(2, 3)))
