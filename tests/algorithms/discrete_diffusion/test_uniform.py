"""Forward process, posterior and NELBO against brute-force references.

References, none of which uses the closed forms under test:
* Bayes' rule by enumerating the joint p(x0, z_s, z_t) = x[x0] Q_s[x0, z_s] Q_ts[z_s, z_t]
  over explicit transition matrices;
* the NELBO as the finite-difference limit E_z KL(q(z_s|z_t,x) || q(z_s|z_t,x_theta)) / dt,
  with both posteriors from that enumeration and z_t enumerated with its exact weights;
* q_sample frequencies against alpha onehot(x) + (1 - alpha)/V (scipy chi-square).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy import stats

from raystudy.algorithms.discrete_diffusion import (
    CosineAlpha,
    LinearAlpha,
    nelbo_per_token,
    posterior,
    q_sample,
)

from ._reference import bayes_posterior, transition

# ---- posterior ---------------------------------------------------------------------------

@pytest.mark.parametrize("V", [2, 3, 6])
def test_posterior_equals_bayes_rule_by_enumeration(V):
    rng = np.random.default_rng(V)
    cases = 40
    x_soft = rng.dirichlet(np.ones(V), size=cases)
    x_hot = np.eye(V)[rng.integers(V, size=cases)]
    x = np.concatenate([x_soft, x_hot])                                # (2 cases, V)
    alpha_t = rng.uniform(0.0, 0.95, size=2 * cases)
    alpha_s = alpha_t + rng.uniform(0.0, 1.0, size=2 * cases) * (1 - alpha_t)
    alpha_s[::7] = 1.0                                                 # the noise-removal step
    z = rng.integers(V, size=2 * cases)
    got = posterior(torch.from_numpy(x), torch.from_numpy(z), torch.from_numpy(alpha_s),
                    torch.from_numpy(alpha_t))
    assert got.dtype == torch.float64 and got.shape == (2 * cases, V)
    want = np.stack([bayes_posterior(x[i], int(z[i]), alpha_s[i], alpha_t[i])
                     for i in range(2 * cases)])
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-12)


def test_posterior_broadcasts_per_sequence_alphas_and_keeps_the_dtype():
    V, B, L = 4, 3, 5
    g = torch.Generator().manual_seed(0)
    x = torch.softmax(torch.randn(B, L, V, generator=g, dtype=torch.float64), -1)
    z = torch.randint(V, (B, L), generator=g)
    alpha_t = torch.tensor([[0.2], [0.5], [0.8]], dtype=torch.float64)
    alpha_s = alpha_t + 0.1
    got = posterior(x, z, alpha_s, alpha_t)
    for b, ell in itertools.product(range(B), range(L)):
        want = bayes_posterior(x[b, ell].numpy(), int(z[b, ell]), float(alpha_s[b, 0]),
                               float(alpha_t[b, 0]))
        np.testing.assert_allclose(got[b, ell].numpy(), want, atol=1e-12)
    assert posterior(x.float(), z, 0.6, 0.5).dtype == torch.float32


def test_posterior_rejects_ids_outside_the_vocabulary_and_reversed_times():
    x = torch.full((2, 4), 0.25)
    with pytest.raises(ValueError, match=r"outside \[0, 4\)") as info:
        posterior(x, torch.tensor([0, 4]), 0.6, 0.5)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="alpha_s"):
        posterior(x, torch.tensor([0, 1]), 0.4, 0.5)


# ---- q_sample ----------------------------------------------------------------------------

def test_q_sample_frequencies_match_the_forward_marginal():
    V, L = 6, 30_000
    alphas = torch.tensor([[0.9], [0.5], [0.1], [0.0]], dtype=torch.float64)
    x = torch.tensor([2, 0, 5, 3]).repeat_interleave(L).view(4, L)
    z, moved = q_sample(x, alphas, V, generator=torch.Generator().manual_seed(1))
    assert z.shape == x.shape and z.dtype == torch.int64 and moved.dtype == torch.bool
    for row in range(4):
        a, x0 = float(alphas[row]), int(x[row, 0])
        expected = (a * np.eye(V)[x0] + (1 - a) / V) * L
        observed = np.bincount(z[row].numpy(), minlength=V)
        assert stats.chisquare(observed, expected).pvalue > 1e-3
        # moved ~ Bernoulli(1 - alpha); a moved token is uniform over all V (may stay x)
        assert stats.binomtest(int(moved[row].sum()), L, 1 - a).pvalue > 1e-3
        landed = np.bincount(z[row][moved[row]].numpy(), minlength=V)
        if landed.sum():
            assert stats.chisquare(landed).pvalue > 1e-3
    changed = z != x
    assert not (changed & ~moved).any()                                # changed implies moved
    assert (moved & ~changed).any()                                    # a move can land on x


def test_q_sample_is_seeded_and_alpha_one_keeps_every_token():
    x = torch.randint(7, (4, 9), generator=torch.Generator().manual_seed(0))
    first = q_sample(x, 0.3, 7, generator=torch.Generator().manual_seed(5))
    again = q_sample(x, 0.3, 7, generator=torch.Generator().manual_seed(5))
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])
    z, moved = q_sample(x, 1.0, 7)
    assert torch.equal(z, x) and not moved.any()


@pytest.mark.parametrize("bad", [[[0, 7]], [[-1, 2]]])
def test_q_sample_rejects_ids_outside_the_vocabulary_in_one_line(bad):
    with pytest.raises(ValueError, match=r"outside \[0, 7\)") as info:
        q_sample(torch.tensor(bad), 0.5, 7)
    assert "\n" not in str(info.value)


def test_q_sample_rejects_alphas_that_do_not_broadcast_or_leave_the_unit_interval():
    x = torch.zeros(3, 4, dtype=torch.long)
    with pytest.raises(ValueError, match="broadcast"):
        q_sample(x, torch.full((4, 1), 0.5), 5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        q_sample(x, 1.5, 5)


# ---- NELBO -------------------------------------------------------------------------------

def kl_limit(x0: int, x_theta: np.ndarray, t: float, schedule, dt: float) -> float:
    """E_{z_t ~ q(.|x0)} KL(q(z_s|z_t,x0) || q(z_s|z_t,x_theta)) / dt, s = t - dt."""
    V = len(x_theta)
    a_t, a_s = schedule.alpha(t), schedule.alpha(t - dt)
    q_z = transition(a_t, V)[x0]
    total = 0.0
    for z_t in range(V):
        p = bayes_posterior(np.eye(V)[x0], z_t, a_s, a_t)
        q = bayes_posterior(x_theta, z_t, a_s, a_t)
        total += q_z[z_t] * float(np.sum(p * np.log(p / q)))
    return total / dt


@pytest.mark.parametrize("schedule", [LinearAlpha(), CosineAlpha()], ids=["linear", "cosine"])
def test_nelbo_mean_over_z_is_the_kl_limit(schedule):
    V = 5
    rng = np.random.default_rng(3)
    times = np.array([0.105, 0.442, 0.635, 0.9])                       # one time per position
    x0 = rng.integers(V, size=len(times))
    x_theta = rng.dirichlet(np.ones(V), size=len(times))
    L = len(times)
    # Row b holds z_t = b at every position, so each column enumerates z_t.
    z = torch.arange(V).view(V, 1).expand(V, L)
    x = torch.from_numpy(x0).view(1, L).expand(V, L)
    log_x_theta = torch.from_numpy(np.log(x_theta)).view(1, L, V).expand(V, L, V)
    t = torch.from_numpy(times).view(1, L)
    ell = nelbo_per_token(log_x_theta, z, x, schedule.alpha(t), schedule.dalpha(t))
    assert ell.shape == (V, L) and ell.dtype == torch.float64
    assert (ell >= 0).all()
    for pos in range(L):
        q_z = transition(schedule.alpha(float(times[pos])), V)[x0[pos]]
        got = float(np.dot(q_z, ell[:, pos].numpy()))
        want = kl_limit(int(x0[pos]), x_theta[pos], float(times[pos]), schedule, dt=1e-7)
        assert got == pytest.approx(want, rel=1e-4)


def test_nelbo_is_zero_at_the_oracle_and_positive_elsewhere():
    V, B, L = 6, 4, 7
    g = torch.Generator().manual_seed(2)
    x = torch.randint(V, (B, L), generator=g)
    alpha_t = torch.rand(B, 1, generator=g, dtype=torch.float64) * 0.9 + 0.05
    z, _ = q_sample(x, alpha_t, V, generator=g)
    oracle = torch.log(torch.nn.functional.one_hot(x, V).double())    # -inf off x
    ell = nelbo_per_token(oracle, z, x, alpha_t, -0.999)
    assert ell.abs().max() < 1e-12
    log_x_theta = torch.log_softmax(torch.randn(B, L, V, generator=g, dtype=torch.float64), -1)
    assert (nelbo_per_token(log_x_theta, z, x, alpha_t, -0.999) > 0).all()


def test_nelbo_is_differentiable_and_its_gradient_vanishes_at_the_oracle():
    V = 4
    x = torch.tensor([[1, 3]])
    z = torch.tensor([[1, 0]])
    near = torch.nn.functional.one_hot(x, V).double() * 0.999 + 0.001 / V
    logits = torch.log(near).requires_grad_()
    ell = nelbo_per_token(torch.log_softmax(logits, -1), z, x, 0.4, -1.0).sum()
    (grad,) = torch.autograd.grad(ell, logits)
    assert torch.isfinite(grad).all()
    far = torch.zeros(1, 2, V, dtype=torch.float64, requires_grad=True)
    ell_far = nelbo_per_token(torch.log_softmax(far, -1), z, x, 0.4, -1.0).sum()
    (grad_far,) = torch.autograd.grad(ell_far, far)
    assert grad.abs().max() < 0.05 * grad_far.abs().max()


def test_nelbo_rejects_bad_ids_and_alpha_at_the_ends():
    log_x_theta = torch.log(torch.full((1, 2, 3), 1 / 3))
    with pytest.raises(ValueError, match=r"outside \[0, 3\)") as info:
        nelbo_per_token(log_x_theta, torch.tensor([[0, 3]]), torch.tensor([[0, 1]]), 0.5, -1.0)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="alpha_t"):
        nelbo_per_token(log_x_theta, torch.tensor([[0, 1]]), torch.tensor([[0, 1]]), 1.0, -1.0)
