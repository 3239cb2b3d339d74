"""The diffusion sampler against an analytic Gaussian score, and each metric against an
independent formula (scipy, brute-force loops)."""

import numpy as np
import pytest
import scipy.spatial.distance
import scipy.stats
import torch

from raystudy.algorithms.condensation.diffusion import (
    Denoiser,
    GaussianDiffusion,
    gaussian_eps_fn,
    linear_betas,
    model_eps_fn,
)
from raystudy.algorithms.condensation.metrics import (
    class_accuracy,
    median_bandwidth,
    precision_recall_knn,
    sliced_wasserstein,
    tail_recall,
    wasserstein_1d,
)

MEANS = torch.tensor([[2.0, -1.0], [-3.0, 0.5], [0.0, 0.0]])  # last row: the null label
COV = torch.tensor([[0.5, 0.2], [0.2, 0.3]])


def test_linear_schedule_is_dits():
    b = linear_betas(1000)
    assert b[0] == pytest.approx(1e-4) and b[-1] == pytest.approx(0.02) and len(b) == 1000
    assert np.cumprod(1 - b)[-1] < 1e-4  # x_T is close to N(0, I)


@pytest.mark.parametrize("method", ["ddpm", "ddim"])
def test_sampler_with_analytic_score_reproduces_gaussian(method):
    diff = GaussianDiffusion(1000)
    n = 4000
    y = torch.zeros(n, dtype=torch.long)
    x = diff.sample(gaussian_eps_fn(diff, MEANS, COV), y, 2, torch.Generator().manual_seed(0),
                    steps=100, method=method).double().numpy()
    # Monte Carlo error of the mean: sqrt(0.5 / 4000) = 0.011; of the covariance ~ 0.01
    assert np.allclose(x.mean(0), MEANS[0].numpy(), atol=0.05)
    assert np.allclose(np.cov(x, rowvar=False), COV.numpy(), atol=0.05)


def test_cfg_of_gaussians_shifts_the_mean():
    # eps* is linear in the target mean, so guided eps = eps of the mean m_u + w (m_c - m_u)
    diff = GaussianDiffusion(1000)
    y = torch.ones(3000, dtype=torch.long)
    x = diff.sample(gaussian_eps_fn(diff, MEANS, COV), y, 2, torch.Generator().manual_seed(1),
                    steps=50, method="ddim", guidance=1.5, null_label=2).double().numpy()
    target = MEANS[2] + 1.5 * (MEANS[1] - MEANS[2])
    assert np.allclose(x.mean(0), target.numpy(), atol=0.06)
    assert np.allclose(np.cov(x, rowvar=False), COV.numpy(), atol=0.05)


def test_q_sample_marginal():
    diff = GaussianDiffusion(1000)
    g = torch.Generator().manual_seed(2)
    x0 = torch.full((20000, 1), 3.0)
    t = torch.full((20000,), 500, dtype=torch.long)
    xt = diff.q_sample(x0, t, torch.randn(x0.shape, generator=g))
    abar = diff.alphas_cumprod[500]
    assert float(xt.mean()) == pytest.approx(3 * np.sqrt(abar), abs=0.02)
    assert float(xt.var()) == pytest.approx(1 - abar, abs=0.02)


def test_trained_denoiser_learns_class_means():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    diff, model = GaussianDiffusion(1000), Denoiser(2, 2, hidden=64, depth=2)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    y_all = torch.arange(2).repeat(64)
    first = last = 0.0
    for step in range(300):
        x0 = MEANS[y_all] + 0.3 * torch.randn((128, 2), generator=g)
        loss = diff.loss(model, x0, y_all, g)
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = float(loss.detach()) if step == 0 else first
        last = float(loss.detach())
    assert last < first
    model.eval()
    x = diff.sample(model_eps_fn(model), torch.tensor([0] * 500 + [1] * 500), 2, g,
                    steps=50, method="ddim")
    assert np.allclose(x[:500].mean(0).numpy(), MEANS[0].numpy(), atol=0.35)
    assert np.allclose(x[500:].mean(0).numpy(), MEANS[1].numpy(), atol=0.35)


def test_wasserstein_1d_against_scipy_and_sorting():
    rng = np.random.default_rng(0)
    u, v = rng.normal(size=37), rng.exponential(size=53)
    assert wasserstein_1d(u, v, p=1) == pytest.approx(scipy.stats.wasserstein_distance(u, v))
    a, b = rng.normal(size=40), rng.normal(size=40) + 1
    assert wasserstein_1d(a, b, p=2) == pytest.approx(np.mean((np.sort(a) - np.sort(b)) ** 2))


def test_sliced_wasserstein_brute_force():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(30, 3)), rng.normal(size=(30, 3)) + 0.7
    theta = np.random.default_rng(5).normal(size=(16, 3))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    ref = np.mean([np.mean((np.sort(X @ t) - np.sort(Y @ t)) ** 2) for t in theta]) ** 0.5
    assert sliced_wasserstein(X, Y, 16, seed=5) == pytest.approx(ref)
    assert sliced_wasserstein(X, X, 16) == pytest.approx(0.0, abs=1e-12)


def brute_pr(real, fake, k):
    def radius(ref, i):
        d = sorted(np.linalg.norm(ref[i] - ref[j]) for j in range(len(ref)) if j != i)
        return d[k - 1]

    def inside(ref, q):
        r = [radius(ref, i) for i in range(len(ref))]
        return np.mean([any(np.linalg.norm(p - ref[i]) <= r[i] for i in range(len(ref)))
                        for p in q])
    return inside(real, fake), inside(fake, real)


def test_precision_recall_and_tail_brute_force():
    rng = np.random.default_rng(2)
    real, fake = rng.normal(size=(40, 2)), 0.5 * rng.normal(size=(30, 2)) + 0.8
    p, r = precision_recall_knn(real, fake, k=3)
    assert (p, r) == pytest.approx(brute_pr(real, fake, 3))
    assert 0 < r < p  # a narrow, shifted fake set: precise but not covering
    tail = 4 * rng.normal(size=(25, 2))
    assert tail_recall(tail, fake, 3) == pytest.approx(brute_pr(tail, fake, 3)[1])
    assert np.isnan(tail_recall(np.zeros((0, 2)), fake))


def test_bandwidth_and_class_accuracy():
    X = np.random.default_rng(3).normal(size=(31, 4))
    assert median_bandwidth(X) == pytest.approx(np.median(scipy.spatial.distance.pdist(X)))
    lp = np.log(np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]]))
    assert class_accuracy(lp, np.array([0, 1, 1])) == pytest.approx(2 / 3)
