"""Lanczos, SLQ density and epsilon-rank against eigvalsh of torch.func.hessian (float64)."""

from __future__ import annotations

import math

import pytest
import torch
from torch.func import functional_call

from raystudy.algorithms.plasticity import (
    SpectralDensity,
    density_from_quadrature,
    epsilon_rank,
    hessian_eigenvalues,
    hessian_spectral_density,
    lanczos,
    make_hvp,
)

CE = torch.nn.functional.cross_entropy
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")


def tiny_problem(activation=torch.nn.Tanh, seed=0, n=12):
    """A 3-5-3 net (38 parameters) in float64 and a batch of labelled points."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(3, 5), activation(), torch.nn.Linear(5, 3)).double()
    x = torch.randn(n, 3, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (n,), generator=g)
    return net, x, y


def reference_hessian(net, x, y) -> torch.Tensor:
    """torch.func.hessian of the loss as a function of the flat parameter vector."""
    names = [k for k, _ in net.named_parameters()]
    shapes = [p.shape for _, p in net.named_parameters()]
    flat0 = torch.cat([p.detach().reshape(-1) for p in net.parameters()])

    def loss(flat):
        tree, start = {}, 0
        for name, shape in zip(names, shapes, strict=True):
            size = math.prod(shape)
            tree[name] = flat[start:start + size].reshape(shape)
            start += size
        return CE(functional_call(net, tree, (x,)), y)

    return torch.func.hessian(loss)(flat0)


@pytest.fixture(scope="module")
def problem():
    net, x, y = tiny_problem()
    h = reference_hessian(net, x, y)
    return net, x, y, h, torch.linalg.eigvalsh(h)


def test_dense_and_full_lanczos_give_the_reference_spectrum(problem):
    net, x, y, _, eig = problem
    top = eig.flip(0)[:6]
    dense = hessian_eigenvalues(net, CE, x, y, k=6, method="dense")
    assert torch.allclose(dense, top, atol=1e-12, rtol=0)
    g = torch.Generator().manual_seed(3)
    full = hessian_eigenvalues(net, CE, x, y, k=6, iterations=38, generator=g)
    assert torch.allclose(full, top, atol=1e-10, rtol=0)
    assert (full[:-1] >= full[1:]).all()


def test_partial_lanczos_finds_the_top_eigenvalues_first(problem):
    net, x, y, _, eig = problem
    top = eig.flip(0)
    g = torch.Generator().manual_seed(4)
    part = hessian_eigenvalues(net, CE, x, y, k=3, iterations=20, generator=g)
    assert torch.allclose(part, top[:3], rtol=1e-6, atol=1e-10)


def test_restart_after_breakdown_recovers_multiplicities():
    # Dead ReLU units give exactly repeated (zero) eigenvalues: the Krylov space of one
    # start vector is smaller than p, so Lanczos must restart to see all p of them.
    net, x, y = tiny_problem(torch.nn.ReLU, seed=2)
    with torch.no_grad():
        net[0].bias[:2] = -50.0  # two units never fire
    eig = torch.linalg.eigvalsh(reference_hessian(net, x, y))
    assert int((eig.abs() < 1e-12).sum()) > 10
    matvec, p = make_hvp(net, CE, x, y)
    theta, _ = lanczos(matvec, p, p, generator=torch.Generator().manual_seed(0),
                       dtype=torch.float64).nodes_weights()
    assert torch.allclose(theta, eig, atol=1e-9)


def test_quadrature_reproduces_the_start_vectors_moments_exactly(problem):
    net, x, y, h, _ = problem
    matvec, p = make_hvp(net, CE, x, y)
    v = torch.randn(p, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    v /= v.norm()
    theta, tau = lanczos(matvec, p, 5, v0=v, dtype=torch.float64).nodes_weights()
    for order in range(10):  # Gauss quadrature with m = 5 nodes is exact up to 2m - 1
        exact = v @ torch.linalg.matrix_power(h, order) @ v
        assert float((tau * theta ** order).sum()) == pytest.approx(float(exact), rel=1e-8,
                                                                    abs=1e-12)


def test_hvp_by_chunks_equals_the_whole_batch(problem):
    net, x, y, h, _ = problem
    v = torch.randn(h.shape[0], generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    whole, _ = make_hvp(net, CE, x, y)
    chunked, _ = make_hvp(net, CE, x, y, batch_size=5)  # chunks of 5, 5, 2 samples
    assert torch.allclose(whole(v), h @ v, atol=1e-12)
    assert torch.allclose(chunked(v), h @ v, atol=1e-12)


def test_quadrature_moments_estimate_the_trace_moments_of_the_reference(problem):
    net, x, y, h, eig = problem
    p, probes = h.shape[0], 150
    density = hessian_spectral_density(net, CE, x, y, iterations=6, probes=probes,
                                       generator=torch.Generator().manual_seed(7))
    for order in (1, 2):
        exact = float((eig ** order).mean())  # tr(H^i) / p
        # v uniform on the sphere: Var(v'Av) = 2 (tr(A^2)/p - (tr A/p)^2) / (p + 2)
        a = eig ** order
        std_error = math.sqrt(2 * float((a ** 2).mean() - a.mean() ** 2) / (p + 2) / probes)
        assert density.quadrature_moment(order) == pytest.approx(exact, abs=4 * std_error)


def test_smoothed_density_keeps_the_quadrature_mean_and_adds_the_kernel_variance(problem):
    net, x, y, _, _ = problem
    density = hessian_spectral_density(net, CE, x, y, iterations=8,
                                       generator=torch.Generator().manual_seed(7))
    variance = 1e-5 * max(1.0, float(density.grid[-1] - density.grid[0]))
    assert density.moment(0) == pytest.approx(1.0, abs=1e-9)
    # The grid ends 0.01 beyond the extreme nodes (3 kernel widths here): a small cut.
    assert density.moment(1) == pytest.approx(density.quadrature_moment(1), abs=2e-4)
    assert density.moment(2) == pytest.approx(density.quadrature_moment(2) + variance,
                                              abs=2e-4)


def test_epsilon_rank_of_eigenvalue_lists_absolute_and_relative():
    eig = torch.tensor([-2.0, -0.005, 0.0, 0.01, 0.5, 3.0])
    assert epsilon_rank(eig, 0.01) == pytest.approx(50.0)   # -2, 0.5, 3
    assert epsilon_rank(eig, 0.001) == pytest.approx(5 / 6 * 100)
    assert epsilon_rank(eig, 0.1, relative=True) == pytest.approx(50.0)  # > 0.3
    assert epsilon_rank(eig, 0.2, relative=True) == pytest.approx(100 / 3)  # > 0.6
    with pytest.raises(ValueError):
        epsilon_rank(eig, -1.0)


def test_epsilon_rank_of_a_density_counts_mass_outside_the_band():
    # Nodes -0.4, 0, 0.5 with weights 0.25, 0.5, 0.25 (two identical probes); the grid is
    # [-0.41, 0.51], the kernel N(theta, 1e-5): closed form with the normal CDF.
    nodes = torch.tensor([[-0.4, 0.0, 0.5]] * 2, dtype=torch.float64)
    weights = torch.tensor([[0.25, 0.5, 0.25]] * 2, dtype=torch.float64)
    density = density_from_quadrature(nodes, weights)
    assert isinstance(density, SpectralDensity)
    std = math.sqrt(1e-5)

    def mass(a, b):  # kernel mass of every node inside [a, b]
        cdf = torch.special.ndtr
        return (weights[0] * (cdf((b - nodes[0]) / std) - cdf((a - nodes[0]) / std))).sum()

    def expected(threshold):
        total = mass(-0.41, 0.51)
        inside = mass(-threshold, threshold)
        return float(100 * (total - inside) / total)

    assert epsilon_rank(density, 0.1) == pytest.approx(expected(0.1), abs=0.05)
    assert epsilon_rank(density, 0.45) == pytest.approx(expected(0.45), abs=0.05)
    assert expected(0.45) == pytest.approx(25.0, abs=0.1)
    assert epsilon_rank(density, 0.9, relative=True) == pytest.approx(expected(0.45), abs=0.05)
    assert density.top(2).tolist() == [0.5, 0.0]


def test_density_epsilon_rank_approaches_the_eigenvalue_fraction(problem):
    net, x, y, _, eig = problem
    density = hessian_spectral_density(net, CE, x, y, iterations=38, probes=40,
                                       generator=torch.Generator().manual_seed(8))
    gaps = (eig[1:] - eig[:-1]).abs()
    eps = float(eig.abs().sort().values[20:22].mean())  # between two eigenvalues
    assert float(gaps.max()) > 0
    assert epsilon_rank(density, eps) == pytest.approx(epsilon_rank(eig, eps), abs=6.0)


def test_float32_lanczos_agrees_with_float64_reference(problem):
    net, x, y, _, eig = problem
    top = hessian_eigenvalues(net.float(), CE, x.float(), y, k=3, iterations=38,
                              generator=torch.Generator().manual_seed(9))
    net.double()
    assert top.dtype == torch.float32
    assert torch.allclose(top.double(), eig.flip(0)[:3], rtol=1e-4, atol=1e-6)
