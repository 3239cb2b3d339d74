"""TRMM / SYRK through SciPy's BLAS equal torch's general products."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from raystudy.algorithms.empirical_gp import products


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
@pytest.mark.parametrize("blas", [True, False])
def test_triangular_and_symmetric_products_equal_matmul(dtype, tol, blas, monkeypatch):
    if not blas:
        monkeypatch.setattr(products, "_blas", lambda t: None)
    g = torch.Generator().manual_seed(0)
    A = torch.randn(301, 17, generator=g, dtype=dtype)
    F = torch.randn(17, 17, generator=g, dtype=dtype)
    out = torch.empty(301, 17, dtype=dtype)
    result = products.times_triangular(A, F, out)
    assert result.data_ptr() == out.data_ptr()
    np.testing.assert_allclose(out, A @ torch.tril(F), rtol=0, atol=tol * 17)
    products.times_triangular(A, F, out, lower=False)
    np.testing.assert_allclose(out, A @ torch.triu(F), rtol=0, atol=tol * 17)
    products.times_triangular(A, F.mT, out, lower=False)          # a non-contiguous factor
    np.testing.assert_allclose(out, A @ torch.triu(F.mT), rtol=0, atol=tol * 17)
    H = products.gram(A)
    np.testing.assert_allclose(H, A.mT @ A, rtol=0, atol=tol * 301)
    assert torch.equal(H, H.mT)
    np.testing.assert_allclose(A, torch.randn(301, 17, generator=torch.Generator()
                                              .manual_seed(0), dtype=dtype))  # A untouched


def test_blas_is_used_on_cpu_float_tensors_only():
    assert products._blas(torch.zeros(2, dtype=torch.float64)) is not None
    assert products._blas(torch.zeros(2, dtype=torch.float16)) is None
