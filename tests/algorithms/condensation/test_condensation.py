import numpy as np
import pytest
import scipy.linalg
import torch

from raystudy.algorithms.condensation import (
    SelectionObjective,
    brute_force,
    frechet_distance,
    gadc_shipped_cost,
    greedy_select,
    kcenter_greedy,
    mmd2_unbiased,
    partial_lp,
    partial_ot,
    partial_ot_exact,
    select_subset,
    swap_refine,
)
from raystudy.algorithms.condensation.partial_ot import _sinkhorn_log, marginals
from raystudy.algorithms.condensation.select import kcenter_radius, sqdist


def problem(seed=0, K=4, n=30):
    rng = np.random.default_rng(seed)
    return sqdist(rng.normal(size=(K, 3)), rng.normal(size=(n, 3)))


@pytest.mark.parametrize("kappa", [1.0, 1.2])
def test_partial_ot_tends_to_lp(kappa):
    C = problem()
    exact = partial_lp(C, kappa)
    errs = [abs(float(partial_ot(torch.tensor(C), kappa, e * np.median(C))[0]) - exact)
            for e in (0.1, 0.01)]
    assert errs[1] < errs[0] and errs[1] / exact < 0.02


@pytest.mark.parametrize("kappa", [1.0, 1.05, 1.5])
def test_pot_reference_equals_the_lp_and_emd2(kappa):
    ot = pytest.importorskip("ot")
    C = problem(seed=4, K=3, n=12)
    value, plan = partial_ot_exact(C, kappa)
    assert value == pytest.approx(partial_lp(C, kappa), rel=1e-9, abs=1e-12)
    assert np.allclose(plan.sum(1), 1 / 3) and (plan.sum(0) <= kappa / 12 + 1e-12).all()
    if kappa == 1.0:
        assert value == pytest.approx(ot.emd2(np.full(3, 1 / 3), np.full(12, 1 / 12), C))
    # the converged entropic value tends to it (from above, up to the solver's tolerance)
    gaps = [float(partial_ot(torch.tensor(C), kappa, e * np.median(C))[0]) - value
            for e in (0.1, 0.03)]
    assert -1e-6 <= gaps[1] < gaps[0]


@pytest.mark.parametrize(("kappa", "eps_rel"), [(1.0, 0.2), (1.05, 0.2), (1.05, 0.05),
                                              (1.2, 0.02)])
def test_newton_solves_what_sinkhorn_converges_to(kappa, eps_rel):
    """Newton on the semi-dual and many Sinkhorn sweeps meet at the same plan; Newton meets
    the row tolerance with columns exact, at balanced kappa = 1 as well."""
    C = torch.tensor(np.stack([problem(seed=s, K=3, n=15) for s in range(4)]))
    eps = eps_rel * float(C.median())
    cost, plan = partial_ot(C, kappa, eps, None, tol=1e-10)
    assert float((plan.sum(-1) - 1 / 3).abs().sum(-1).max()) < 1e-10
    assert (plan.sum(-2) <= kappa / 15 + 1e-12).all()
    C_aug, mu, nu = marginals(C, kappa)
    reference = _sinkhorn_log(-C_aug / eps, mu, nu, 20_000)[..., :3, :]
    assert torch.allclose(plan, reference, atol=1e-9)
    assert torch.allclose(cost, (reference * C).sum((-2, -1)), rtol=1e-9)


def test_balanced_at_low_temperature_sinkhorn_crawls_towards_newton():
    """At kappa = 1, eps = 0.02 median, Sinkhorn is still 1e-5 off after 20,000 sweeps,
    closing in on the plan Newton reaches to 1e-10."""
    C = torch.tensor(np.stack([problem(seed=s, K=3, n=15) for s in range(4)]))
    eps = 0.02 * float(C.median())
    _, plan = partial_ot(C, 1.0, eps, None, tol=1e-10)
    assert float((plan.sum(-1) - 1 / 3).abs().sum(-1).max()) < 1e-10
    _, mu, nu = marginals(C, 1.0)
    gaps = [float((_sinkhorn_log(-C / eps, mu, nu, n) - plan).abs().max())
            for n in (2_000, 20_000)]
    assert gaps[1] < gaps[0] / 2 and gaps[1] > 1e-7


def test_exact_solver_option_matches_pot_per_set():
    pytest.importorskip("ot")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 2))
    D = sqdist(X, X)
    sets = np.array([[0, 3, 5], [1, 2, 7]])
    t = SelectionObjective(kappa=1.05, solver="exact").terms(X, D, sets)
    assert t["ot"] == pytest.approx([partial_ot_exact(D[s], 1.05)[0] for s in sets])
    assert (t["row_err"] < 1e-9).all()
    conv = SelectionObjective(kappa=1.05, eps_rel=0.01).terms(X, D, sets)["ot"]
    assert (conv >= t["ot"] - 1e-9).all()


def test_shipped_invariant_to_dummy():
    C = torch.tensor(problem())
    v = [float(gadc_shipped_cost(C, 1.05, 1.0, 50, dummy_cost=d)[0]) for d in (0, 1, 10)]
    assert np.allclose(v, v[0], rtol=1e-10)


def test_swaps_and_bruteforce():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(10, 2))
    D = sqdist(X, X)
    obj = SelectionObjective(eps_rel=0.05)
    g = greedy_select(X, D, 3, obj)
    S, _ = swap_refine(X, D, g, obj)
    _, best = brute_force(X, D, 3, obj)
    assert obj.J(X, D, np.array(S))[0] <= obj.J(X, D, np.array(g))[0] + 1e-12
    assert obj.J(X, D, np.array(S))[0] >= best - 1e-6
    from itertools import combinations
    opt = min(kcenter_radius(X, c) for c in combinations(range(10), 3))
    assert kcenter_radius(X, kcenter_greedy(X, 3)) <= 2 * opt + 1e-12


def test_budget_per_class():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(60, 2)), np.repeat([0, 1, 2], 20)
    for m in ("random", "kcenter", "herding", "d2c_style", "partial_ot"):
        idx = select_subset(X, y, 3, m, refine_iters=2)
        assert len(set(idx)) == 9 and all((y[idx] == c).sum() == 3 for c in range(3))


def test_metrics_references():
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(20, 3)), rng.normal(size=(25, 3)) + 0.5
    Sx, Sy = np.cov(X, rowvar=False), np.cov(Y, rowvar=False)
    ref = ((X.mean(0) - Y.mean(0)) ** 2).sum() + np.trace(
        Sx + Sy - 2 * scipy.linalg.sqrtm(Sx @ Sy).real)
    assert frechet_distance(X, Y) == pytest.approx(ref, rel=1e-6)
    k = lambda a, b: np.exp(-((a - b) ** 2).sum() / 2)  # noqa: E731
    direct = (sum(k(X[i], X[j]) for i in range(20) for j in range(20) if i != j) / 380
              + sum(k(Y[i], Y[j]) for i in range(25) for j in range(25) if i != j) / 600
              - 2 * np.mean([k(a, b) for a in X for b in Y]))
    assert mmd2_unbiased(X, Y, 1.0) == pytest.approx(direct, rel=1e-9)
