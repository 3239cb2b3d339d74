"""WBMM against independent references: per-window F.conv2d, a NumPy transcription of the
authors' index and Y = X M + X, scipy's correlate2d, and a whole-map depthwise conv."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.signal import correlate2d

from raystudy.algorithms.large_kernel import (
    WBMM,
    depthwise,
    fft_depthwise,
    kernel_from_table,
    macs,
    relative_position_index,
    table_from_kernel,
    table_size,
    unfold_depthwise,
    wbmm,
    windowed_conv,
)


def numpy_wbmm(x: np.ndarray, R: np.ndarray, wh: int, ww: int) -> np.ndarray:
    """The authors' computation transcribed with explicit loops (maps multiples of w)."""
    B, C, H, W = x.shape
    d = wh * ww
    index = np.empty((d, d), dtype=int)
    for p in range(d):
        for q in range(d):
            ph, pw, qh, qw = p // ww, p % ww, q // ww, q % ww
            index[p, q] = (ph - qh + wh - 1) * (2 * ww - 1) + (pw - qw + ww - 1)
    M = R[:, index]  # (C, d, d)
    y = np.empty_like(x)
    for b in range(B):
        for i in range(H // wh):
            for j in range(W // ww):
                X = x[b, :, i * wh:(i + 1) * wh, j * ww:(j + 1) * ww].reshape(C, d)
                Y = np.einsum("cp,cpq->cq", X, M) + X
                y[b, :, i * wh:(i + 1) * wh, j * ww:(j + 1) * ww] = Y.reshape(C, wh, ww)
    return y


def scipy_windowed(x: np.ndarray, R: np.ndarray, wh: int, ww: int) -> np.ndarray:
    B, C, H, W = x.shape
    K = R.reshape(C, 2 * wh - 1, 2 * ww - 1)
    y = x.copy()
    for b in range(B):
        for c in range(C):
            for i in range(0, H, wh):
                for j in range(0, W, ww):
                    win = x[b, c, i:i + wh, j:j + ww]
                    # 'full' is (3wh-2, 3ww-2); offset 0 of the kernel sits at wh-1
                    full = correlate2d(win, K[c], mode="full")
                    y[b, c, i:i + wh, j:j + ww] += full[wh - 1:2 * wh - 1, ww - 1:2 * ww - 1]
    return y


def data(B, C, H, W, window, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    wh, ww = (window, window) if isinstance(window, int) else window
    x = torch.randn(B, C, H, W, generator=g, dtype=dtype)
    R = torch.randn(C, table_size((wh, ww)), generator=g, dtype=dtype)
    return x, R, wh, ww


@pytest.mark.parametrize("shape,window", [((2, 3, 6, 9), 3), ((1, 2, 8, 8), 4),
                                          ((1, 2, 14, 21), 7), ((2, 3, 4, 10), (2, 5))])
def test_numpy_transcription_and_scipy(shape, window):
    x, R, wh, ww = data(*shape, window)
    ours = wbmm(x, R, window).numpy()
    np.testing.assert_allclose(ours, numpy_wbmm(x.numpy(), R.numpy(), wh, ww), atol=1e-12)
    np.testing.assert_allclose(ours, scipy_windowed(x.numpy(), R.numpy(), wh, ww), atol=1e-12)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float32, 1e-4)])
@pytest.mark.parametrize("shape,window", [((2, 4, 8, 8), 4), ((2, 3, 6, 10), (3, 5)),
                                          ((1, 3, 11, 9), 4), ((2, 2, 7, 7), 14)])
def test_equals_windowed_conv_values_and_gradients(shape, window, dtype, tol):
    x, R, wh, ww = data(*shape, window, dtype)
    x1, R1 = x.clone().requires_grad_(), R.clone().requires_grad_()
    x2, R2 = x.clone().requires_grad_(), R.clone().requires_grad_()
    y1 = wbmm(x1, R1, window)
    y2 = windowed_conv(x2, kernel_from_table(R2, window), window)
    assert y1.shape == x.shape
    torch.testing.assert_close(y1, y2, atol=tol, rtol=tol)
    g = torch.randn_like(y1)
    (y1 * g).sum().backward()
    (y2 * g).sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad, atol=tol, rtol=tol)
    torch.testing.assert_close(R1.grad, R2.grad, atol=tol * 10, rtol=tol)


def test_non_multiple_is_the_padded_map_cropped():
    x, R, *_ = data(1, 2, 10, 7, 4)
    padded = F.pad(x, (0, 1, 0, 2))
    y = wbmm(x, R, 4)
    assert y.shape == x.shape
    torch.testing.assert_close(y, wbmm(padded, R, 4)[:, :, :10, :7])
    np.testing.assert_allclose(wbmm(x, R, 4).numpy(),
                               numpy_wbmm(padded.numpy(), R.numpy(), 4, 4)[:, :, :10, :7],
                               atol=1e-12)


def test_identity_flag():
    x, R, *_ = data(1, 2, 8, 8, 4)
    torch.testing.assert_close(wbmm(x, R, 4, identity=False) + x, wbmm(x, R, 4))


@pytest.mark.parametrize("k", [3, 5, 7])
def test_single_window_equals_full_depthwise_conv(k):
    g = torch.Generator().manual_seed(k)
    x = torch.randn(2, 3, 7, 7, generator=g, dtype=torch.float64)
    K = torch.randn(3, 1, k, k, generator=g, dtype=torch.float64)
    y = wbmm(x, table_from_kernel(K, 7), 7)
    torch.testing.assert_close(y, F.conv2d(x, K, padding=k // 2, groups=3) + x)
    # the whole (13 x 13) table as a kernel: full support on the 7x7 map
    R = torch.randn(3, table_size(7), generator=g, dtype=torch.float64)
    torch.testing.assert_close(wbmm(x, R, 7),
                               F.conv2d(x, kernel_from_table(R, 7), padding=6, groups=3) + x)


def test_several_windows_differ_from_whole_map_conv():
    x, R, *_ = data(1, 2, 14, 14, 7)
    whole = F.conv2d(x, kernel_from_table(R, 7), padding=6, groups=2) + x
    assert (wbmm(x, R, 7) - whole).abs().max() > 1e-3


def test_table_round_trip_and_even_kernel():
    K = torch.randn(4, 1, 5, 5, dtype=torch.float64)
    T = table_from_kernel(K, 7)
    back = kernel_from_table(T, 7)
    torch.testing.assert_close(back[:, :, 4:9, 4:9], K)
    back[:, :, 4:9, 4:9] = 0
    assert back.abs().max() == 0  # nothing outside the centred 5x5
    x = torch.randn(1, 4, 7, 7, dtype=torch.float64)
    K4 = torch.randn(4, 1, 4, 4, dtype=torch.float64)  # padding="same" convention
    with warnings.catch_warnings():  # torch's even-kernel 'same' note
        warnings.simplefilter("ignore", UserWarning)
        same = F.conv2d(x, K4, padding="same", groups=4)
    torch.testing.assert_close(wbmm(x, table_from_kernel(K4, 7), 7, identity=False), same)
    with pytest.raises(ValueError, match="does not fit"):
        table_from_kernel(torch.zeros(1, 1, 9, 9), 4)


def test_index_matches_eq_6_7_and_bounds():
    I = relative_position_index((2, 3))
    assert I.shape == (6, 6) and I.min() == 0 and I.max() == table_size((2, 3)) - 1
    assert I[0, 0] == (1 * 5 + 2)  # the centre: zero offset
    assert I[5, 0] == (1 + 1) * 5 + (2 + 2)  # p=(1,2), q=(0,0)


def test_module_cached_and_uncached_agree():
    torch.manual_seed(0)
    m = WBMM(6, window=(4, 3))
    x = torch.randn(2, 6, 9, 8)
    y_nc = m(x)
    m.cache()
    assert m.cached
    torch.testing.assert_close(m(x), y_nc)
    m.train()
    assert not m.cached
    m(x).sum().backward()
    assert m.table.grad is not None and m.table.grad.abs().sum() > 0


def test_table_size_is_checked():
    with pytest.raises(ValueError, match="needs"):
        wbmm(torch.zeros(1, 2, 4, 4), torch.zeros(2, 10), 2)


@pytest.mark.parametrize("k", [3, 5, 9])
def test_baselines_equal_conv2d(k):
    g = torch.Generator().manual_seed(k)
    x = torch.randn(2, 3, 12, 10, generator=g, dtype=torch.float64)
    K = torch.randn(3, 1, k, k, generator=g, dtype=torch.float64)
    ref = F.conv2d(x, K, padding=k // 2, groups=3)
    torch.testing.assert_close(depthwise(x, K), ref)
    torch.testing.assert_close(unfold_depthwise(x, K), ref)
    torch.testing.assert_close(fft_depthwise(x, K), ref)
    # scipy on one channel
    np.testing.assert_allclose(ref[1, 2].numpy(),
                               correlate2d(x[1, 2].numpy(), K[2, 0].numpy(), mode="same"),
                               atol=1e-12)


def test_macs():
    assert macs("wbmm", (2, 160, 28, 28), 14) == 2 * 160 * 28 * 28 * 196
    assert macs("wbmm", (1, 1, 7, 7), 14) == 14 * 14 * 196  # padded to one 14x14 window
    assert macs("dw", (2, 160, 28, 28), 5) == 2 * 160 * 28 * 28 * 25
