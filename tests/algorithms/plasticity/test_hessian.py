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
    # no mass at +-eps: the trapezoid bridging the band adds nothing, the rules agree
    assert epsilon_rank(density, 0.1, method="riemann") == pytest.approx(expected(0.1),
                                                                         abs=0.05)
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
    exact = epsilon_rank(eig, eps)
    assert epsilon_rank(density, eps, method="riemann") == pytest.approx(exact, abs=6.0)
    # 38 = p iterations: the nodes are the eigenvalues, the weights average to 1/p
    assert epsilon_rank(density, eps, method="quadrature") == pytest.approx(exact, abs=6.0)
    # the authors' rule also counts the trapezoid bridging [-eps, eps] (eigenvalues near 0)
    assert epsilon_rank(density, eps) > exact + 10


def test_float32_lanczos_agrees_with_float64_reference(problem):
    net, x, y, _, eig = problem
    top = hessian_eigenvalues(net.float(), CE, x.float(), y, k=3, iterations=38,
                              generator=torch.Generator().manual_seed(9))
    net.double()
    assert top.dtype == torch.float32
    assert torch.allclose(top.double(), eig.flip(0)[:3], rtol=1e-4, atol=1e-6)


def grid_density(values, eps_values=None) -> SpectralDensity:
    """A density given on the grid -0.3, -0.2, ..., 0.3 (nodes and weights unused)."""
    grid = torch.linspace(-0.3, 0.3, 7, dtype=torch.float64)
    one = torch.ones(1, 1, dtype=torch.float64)
    return SpectralDensity(grid, torch.tensor(values, dtype=torch.float64), one, one)


@pytest.mark.parametrize("eps, trapezoid, riemann", [
    # spacing 0.1, density 1 2 4 8 4 2 1: trapz total 0.1 x (22 - 1) = 2.1, point sum 22
    (0.15, 100 * 1.1 / 2.1, 100 * 6 / 22),   # 0.15 + 0.4 x (2 + 2) / 2 + 0.15 = 1.1
    (0.05, 100 * 1.7 / 2.1, 100 * 14 / 22),  # 0.15 + 0.3 + 0.2 x (4 + 4) / 2 + 0.3 + 0.15
    (0.25, 100 * 0.6 / 2.1, 100 * 2 / 22),   # one trapezoid -0.3 .. 0.3: 0.6 x (1 + 1) / 2
    (0.35, 0.0, 0.0),                        # nothing outside
])
def test_epsilon_rank_trapezoid_bridges_the_band_and_riemann_does_not(eps, trapezoid, riemann):
    density = grid_density([1.0, 2.0, 4.0, 8.0, 4.0, 2.0, 1.0])
    assert epsilon_rank(density, eps) == pytest.approx(trapezoid)  # the default: authors'
    assert epsilon_rank(density, eps, method="trapezoid") == pytest.approx(trapezoid)
    assert epsilon_rank(density, eps, method="riemann") == pytest.approx(riemann)
    with pytest.raises(ValueError, match="method='simpson' must be one of"):
        epsilon_rank(density, eps, method="simpson")


def test_epsilon_rank_from_the_quadrature_weights_by_hand():
    nodes = torch.tensor([[-0.5, 0.0, 0.05, 2.0], [-0.02, 0.0, 0.3, 1.0]], dtype=torch.float64)
    weights = torch.tensor([[0.1, 0.5, 0.2, 0.2], [0.25] * 4], dtype=torch.float64)
    density = density_from_quadrature(nodes, weights, grid_len=200)
    # eps 0.1: probe 1 keeps -0.5 and 2.0 (0.3), probe 2 keeps 0.3 and 1.0 (0.5): mean 0.4
    assert epsilon_rank(density, 0.1, method="quadrature") == pytest.approx(40.0)
    # relative 0.2 x |lambda|_max 2.0 = 0.4: probe 1 keeps 0.3, probe 2 only 1.0 (0.25)
    assert epsilon_rank(density, 0.2, relative=True, method="quadrature") == pytest.approx(27.5)
    scaled = density_from_quadrature(10 * nodes, weights, grid_len=200)  # H -> 10 H
    assert epsilon_rank(scaled, 0.2, relative=True, method="quadrature") == pytest.approx(27.5)
    # absolute eps is not scale-invariant: probe 1 keeps -5, 0.5, 20; probe 2 -0.2, 3, 10
    assert epsilon_rank(scaled, 0.1, method="quadrature") == pytest.approx(62.5)


def test_kernel_smoothing_grows_with_the_range_and_the_quadrature_does_not():
    """The same bulk (-1 and 0, weights 1/4 and 1/2) with a top eigenvalue of 0.5 or 50:
    the kernel variance 1e-5 x max(1, range) spreads the spike at 0 across +-eps when the
    range is large. References: the Gaussian mixture's closed form on the grid."""
    eps, cdf = 0.01, torch.special.ndtr
    for top, riemann_low, riemann_high in ((0.5, 50.0, 51.5), (50.0, 78.0, 81.0)):
        nodes = torch.tensor([[-1.0, 0.0, top]], dtype=torch.float64)
        weights = torch.tensor([[0.25, 0.5, 0.25]], dtype=torch.float64)
        density = density_from_quadrature(nodes, weights)
        grid = density.grid
        std = math.sqrt(1e-5 * max(1.0, float(grid[-1] - grid[0])))

        def mass(a, b, std=std, nodes=nodes, weights=weights):
            return float((weights[0] * (cdf((b - nodes[0]) / std)
                                        - cdf((a - nodes[0]) / std))).sum())

        def pdf(t, std=std, nodes=nodes, weights=weights):
            z = (t - nodes[0]) / std
            return float((weights[0] * torch.exp(-z ** 2 / 2)).sum()
                         / (std * math.sqrt(2 * math.pi)))

        lo, hi = float(grid[0]), float(grid[-1])
        total = mass(lo, hi)
        riemann = 100 * (total - mass(-eps, eps)) / total
        left = float(grid[grid < -eps][-1])   # the nearest kept points either side
        right = float(grid[grid > eps][0])
        bridge = (right - left) * (pdf(left) + pdf(right)) / 2
        trapezoid = 100 * (total - mass(left, right) + bridge) / total
        assert riemann_low < riemann < riemann_high
        assert epsilon_rank(density, eps, method="riemann") == pytest.approx(riemann, abs=0.3)
        assert epsilon_rank(density, eps) == pytest.approx(trapezoid, abs=0.3)
        assert epsilon_rank(density, eps, method="quadrature") == 50.0  # -1 and the top
