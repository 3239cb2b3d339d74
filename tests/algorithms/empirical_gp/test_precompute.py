"""The precomputation: the fused Matern/RBF kernel of ShiftBasis.k against GPyTorch,
V^T computed block-wise in float64 and rounded to float32."""

import gpytorch
import numpy as np
import pytest
import torch

from raystudy.algorithms.empirical_gp.prior import ShiftBasis, stationary_form

DT = torch.float64


def make(kind: str, d: int) -> gpytorch.kernels.Kernel:
    """A Matern-nu / RBF kernel (ARD when d > 1), or a scaled Matern-5/2."""
    inner = gpytorch.kernels.RBFKernel(ard_num_dims=d) if kind == "rbf" else \
        gpytorch.kernels.MaternKernel(nu=float(kind.split("-")[-1]) if "-" in kind else 2.5,
                                      ard_num_dims=d)
    inner = inner.to(DT)
    inner.lengthscale = torch.tensor([[0.2, 0.35][:d]], dtype=DT)
    if kind != "scaled":
        return inner
    kernel = gpytorch.kernels.ScaleKernel(inner).to(DT)
    kernel.outputscale = 1.7
    return kernel


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("kind", ["matern-0.5", "matern-1.5", "matern-2.5", "rbf", "scaled"])
def test_fused_kernel_equals_gpytorch(kind, d):
    kernel = make(kind, d)
    gen = torch.Generator().manual_seed(d)
    Z = torch.rand(12, d, generator=gen, dtype=DT)
    basis = ShiftBasis(Z, kernel)
    assert stationary_form(basis.base_kernel) is not None
    x = torch.rand(3, 7, d, generator=gen, dtype=DT)          # a batch, as the E-step's groups
    with torch.no_grad():
        ref = basis.base_kernel(x, Z).to_dense()
        np.testing.assert_allclose(basis.k(x, Z), ref, atol=1e-7, rtol=0)
        np.testing.assert_allclose(basis.k(x, x), basis.base_kernel(x, x).to_dense(),
                                   atol=1e-7, rtol=0)


def test_other_kernels_go_through_gpytorch():
    periodic = gpytorch.kernels.PeriodicKernel().to(DT)
    active = gpytorch.kernels.MaternKernel(nu=2.5, active_dims=[0]).to(DT)
    assert stationary_form(periodic) is None and stationary_form(active) is None
    Z = torch.linspace(0, 1, 5, dtype=DT).unsqueeze(-1)
    basis = ShiftBasis(Z, periodic)
    with torch.no_grad():
        np.testing.assert_allclose(basis.k(Z, Z), periodic(Z, Z).to_dense(), atol=1e-12)


def test_float32_whitened_rows_are_the_float64_ones_rounded():
    Z = torch.linspace(0, 1, 30, dtype=DT).unsqueeze(-1)
    basis = ShiftBasis(Z, make("matern-2.5", 1))
    x = torch.rand(50, 1, generator=torch.Generator().manual_seed(3), dtype=DT)
    exact = basis.whitened_rows(x, chunk=7)
    single = basis.whitened_rows(x, chunk=7, dtype=torch.float32)
    assert single.dtype == torch.float32
    assert torch.equal(single, exact.to(torch.float32))
