"""The plug-in ancestral sampler on i.i.d. data against an exact recursion of distributions.

Data: every token i.i.d. from p over V = 5 (the toy of the research notes). A denoiser
that acts on each token separately makes the sampled tokens independent, so the law of
one token under the sampler is a V-vector propagated exactly by the reverse kernels
K[z, z'] = q(z_s = z' | z_t = z, x_hat(z, t)), built here by Bayes' rule on explicit
transition matrices. Two denoisers:
* leave-one-out, x_hat = p(x^l | z^{-l}) = p (i.i.d.): the plug-in chain reproduces p;
* the posterior mean E[x0 | z_t] (prop. to p * (alpha 1[z] + (1 - alpha)/V)): it does not.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from raystudy.algorithms.discrete_diffusion import CosineAlpha, LinearAlpha, ancestral_sample

from ._reference import bayes_posterior

P = np.array([0.55, 0.25, 0.10, 0.07, 0.03])
V = len(P)


def leave_one_out(z: int, alpha_t: float) -> np.ndarray:
    return P


def posterior_mean(z: int, alpha_t: float) -> np.ndarray:
    w = P * (alpha_t * np.eye(V)[z] + (1 - alpha_t) / V)
    return w / w.sum()


def as_denoiser(x_hat, schedule):
    """Wrap a per-token x_hat(z, alpha_t) as ``denoiser(z, t) -> logits`` (n, L, V)."""
    def denoiser(z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        assert t.shape == (z.shape[0],) and (t == t[0]).all()
        alpha_t = schedule.alpha(float(t[0]))
        table = torch.from_numpy(np.stack([x_hat(v, alpha_t) for v in range(V)]))  # (z, x)
        return torch.log(table[z])
    return denoiser


def exact_law(x_hat, schedule, steps: int, t_min: float, noise_removal: str) -> np.ndarray:
    """The law of one sampled token, by propagating the uniform start through the kernels."""
    law = np.full(V, 1 / V)
    times = np.linspace(1.0, t_min, steps + 1)
    grid = [(t, schedule.alpha(s)) for t, s in zip(times[:-1], times[1:], strict=True)]
    if noise_removal == "ancestral":
        grid.append((t_min, 1.0))
    for t, alpha_s in grid:
        alpha_t = schedule.alpha(float(t))
        K = np.stack([bayes_posterior(x_hat(z, alpha_t), z, alpha_s, alpha_t)
                      for z in range(V)])
        law = law @ K
    return law


def tv(a: np.ndarray, b: np.ndarray) -> float:
    return 0.5 * float(np.abs(a - b).sum())


@pytest.mark.parametrize("steps", [4, 16])
def test_exact_recursion_leave_one_out_reproduces_p_and_the_posterior_mean_does_not(steps):
    schedule = LinearAlpha()
    assert tv(exact_law(leave_one_out, schedule, steps, 1e-5, "ancestral"), P) < 1e-5
    assert tv(exact_law(posterior_mean, schedule, steps, 1e-5, "ancestral"), P) > 0.1


@pytest.mark.parametrize(("x_hat", "steps", "noise_removal", "schedule", "t_min"), [
    (leave_one_out, 4, "ancestral", LinearAlpha(), 1e-5),
    (posterior_mean, 4, "ancestral", LinearAlpha(), 1e-5),
    (posterior_mean, 16, "ancestral", CosineAlpha(), 1e-5),
    # a late t_min: the final step to alpha = 1 (or its absence) shapes the law
    (leave_one_out, 3, "ancestral", LinearAlpha(), 0.5),
    (leave_one_out, 3, "none", LinearAlpha(), 0.5),
])
def test_sampler_frequencies_match_the_exact_recursion(x_hat, steps, noise_removal, schedule,
                                                       t_min):
    n, L = 2000, 8
    samples = ancestral_sample(as_denoiser(x_hat, schedule), n, L, V, steps, schedule=schedule,
                               t_min=t_min, noise_removal=noise_removal,
                               generator=torch.Generator().manual_seed(steps))
    assert samples.shape == (n, L) and samples.dtype == torch.int64
    law = exact_law(x_hat, schedule, steps, t_min, noise_removal)
    observed = np.bincount(samples.ravel().numpy(), minlength=V)
    assert stats.chisquare(observed, law * n * L).pvalue > 1e-3
    if x_hat is posterior_mean:
        assert tv(observed / (n * L), P) > 0.1                         # biased, visibly
    if t_min == 0.5:                                                   # the two laws differ
        other = "none" if noise_removal == "ancestral" else "ancestral"
        assert tv(law, exact_law(x_hat, schedule, steps, t_min, other)) > 0.05


def test_sampler_calls_the_denoiser_on_the_time_grid_and_is_seeded():
    seen: list[torch.Tensor] = []

    def recording(z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        seen.append(t.clone())
        return torch.zeros(*z.shape, V)

    first = ancestral_sample(recording, 3, 4, V, 5, t_min=0.01,
                             generator=torch.Generator().manual_seed(0))
    times = [float(t[0]) for t in seen]
    assert all(t.shape == (3,) and (t == t[0]).all() for t in seen)
    want = list(np.linspace(1.0, 0.01, 6)[:-1]) + [0.01]               # 5 steps + removal
    np.testing.assert_allclose(times, want, rtol=1e-6)
    again = ancestral_sample(recording, 3, 4, V, 5, t_min=0.01,
                             generator=torch.Generator().manual_seed(0))
    assert torch.equal(first, again)


def test_greedy_noise_removal_returns_the_argmax_of_the_last_prediction():
    favourite = torch.tensor([4, 0, 2, 2, 1, 3])

    def peaked(z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return 5 * torch.nn.functional.one_hot(favourite, V).float().expand(z.shape[0], -1, -1)

    out = ancestral_sample(peaked, 50, 6, V, 4, noise_removal="greedy",
                           generator=torch.Generator().manual_seed(1))
    assert torch.equal(out, favourite.expand(50, -1))


def test_sampler_rejects_bad_arguments_in_one_line():
    def uniform(z, t):
        return torch.zeros(*z.shape, V)

    for kwargs, match in (({"noise_removal": "argmax"}, "unknown noise_removal"),
                          ({"t_min": 0.0}, "t_min")):
        with pytest.raises(ValueError, match=match) as info:
            ancestral_sample(uniform, 2, 3, V, 2, **kwargs)
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="denoiser returned shape"):
        ancestral_sample(lambda z, t: torch.zeros(*z.shape, V + 1), 2, 3, V, 2)
