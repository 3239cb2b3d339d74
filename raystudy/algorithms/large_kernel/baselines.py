"""The baselines WBMM is timed against: depthwise conv in four implementations.

* ``depthwise``: ``F.conv2d(groups=C, padding="same")`` (odd or even k), the paper's
  "gather-based" baseline;
* ``unfold_depthwise``: an explicit im2col gather (``F.unfold``) and a per-channel
  contraction (k <= 13: it materialises k^2 copies of the map);
* ``fft_depthwise``: FFT convolution (``torch.fft.rfft2``), the same function as
  ``depthwise`` for odd k;
* ``lka``: the iGEMM large-kernel extension (``depthwise_conv2d_implicit_gemm``, CUDA
  source only, not on PyPI) where it imports, else :data:`LKA_MISSING` says why.
"""

from __future__ import annotations

import importlib

import torch
import torch.nn.functional as F
from torch import Tensor

LKA_MISSING = ("iGEMM large-kernel extension not installed (CUDA source extension, not on "
               "PyPI; depthwise_conv2d_implicit_gemm does not import)")


def depthwise(x: Tensor, weight: Tensor) -> Tensor:
    """``x (B, C, H, W)``, ``weight (C, 1, k, k)``: a 'same' depthwise cross-correlation."""
    return F.conv2d(x, weight, padding="same", groups=x.shape[1])


def unfold_depthwise(x: Tensor, weight: Tensor) -> Tensor:
    """The same function by an explicit gather: ``F.unfold`` then sum over the k^2 taps
    (odd k)."""
    B, C, H, W = x.shape
    k = weight.shape[-1]
    if k % 2 == 0:
        raise ValueError("unfold_depthwise takes odd k")
    cols = F.unfold(x, k, padding=k // 2).view(B, C, k * k, H * W)
    return torch.einsum("bckn,ck->bcn", cols, weight.reshape(C, k * k)).view(B, C, H, W)


def fft_depthwise(x: Tensor, weight: Tensor) -> Tensor:
    """The same function through the FFT (odd k): zero-pad to H + k - 1, multiply by the
    conjugate-free flipped kernel's spectrum, crop the 'same' window."""
    B, C, H, W = x.shape
    k = weight.shape[-1]
    if k % 2 == 0:
        raise ValueError("fft_depthwise takes odd k")
    sh, sw = H + k - 1, W + k - 1
    kernel = torch.flip(weight.reshape(C, k, k), (-2, -1))  # correlation = conv with flip
    y = torch.fft.irfft2(torch.fft.rfft2(x, (sh, sw)) * torch.fft.rfft2(kernel, (sh, sw)),
                         (sh, sw))
    r = k // 2
    return y[..., r:r + H, r:r + W]


def lka_available() -> bool:
    try:
        importlib.import_module("depthwise_conv2d_implicit_gemm")
    except Exception:  # noqa: BLE001 - any import failure means "not here"
        return False
    return True


def lka(x: Tensor, weight: Tensor) -> Tensor:
    """The iGEMM depthwise conv (CUDA, odd k); ``RuntimeError(LKA_MISSING)`` where absent."""
    try:
        module = importlib.import_module("depthwise_conv2d_implicit_gemm")
    except Exception:  # noqa: BLE001
        raise RuntimeError(LKA_MISSING) from None
    return module._DepthWiseConv2dImplicitGEMMFP32.apply(x.contiguous(), weight.contiguous())
