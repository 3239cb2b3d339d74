"""simple_loss against cross-entropy computed by hand; uniform_regulariser at known points."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from raystudy.algorithms.discrete_diffusion import q_sample, simple_loss, uniform_regulariser

V = 4
# Two sequences of length 5. Position kinds: moved and changed, moved but landed on x,
# not moved.
X = torch.tensor([[0, 1, 2, 3, 0], [3, 3, 1, 0, 2]])
Z = torch.tensor([[1, 1, 2, 0, 0], [3, 2, 1, 0, 0]])
MOVED = torch.tensor([[True, True, False, True, False], [True, True, False, False, True]])


def logits_fixture() -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.randn(2, 5, V, generator=g, dtype=torch.float64)


def hand_ce(logits: np.ndarray, x: np.ndarray) -> np.ndarray:
    """-log softmax(logits)[x], one token at a time."""
    out = np.zeros(x.shape)
    for b in range(x.shape[0]):
        for ell in range(x.shape[1]):
            row = logits[b, ell]
            out[b, ell] = math.log(sum(math.exp(v) for v in row)) - row[x[b, ell]]
    return out


@pytest.mark.parametrize("mask", ["changed", "moved"])
@pytest.mark.parametrize("normalize", ["masked", "all"])
def test_simple_loss_is_the_masked_mean_of_hand_computed_cross_entropy(mask, normalize):
    logits = logits_fixture()
    ce = hand_ce(logits.numpy(), X.numpy())
    m = (Z != X).numpy() if mask == "changed" else MOVED.numpy()
    assert m.sum() == (4 if mask == "changed" else 6)                  # the masks differ
    denominator = m.sum() if normalize == "masked" else X.numel()
    want = (ce * m).sum() / denominator
    got = simple_loss(logits, X, Z, MOVED, mask=mask, normalize=normalize)
    assert float(got) == pytest.approx(want, rel=1e-12)


def test_simple_loss_elbo_weight_is_minus_dalpha_over_one_minus_alpha_per_sequence():
    logits = logits_fixture()
    ce = hand_ce(logits.numpy(), X.numpy())
    alpha = torch.tensor([[0.3], [0.8]], dtype=torch.float64)
    dalpha = torch.tensor([[-0.999], [-0.5]], dtype=torch.float64)
    w = np.array([[0.999 / 0.7], [0.5 / 0.2]])
    m = MOVED.numpy()
    want = (w * m * ce).sum() / m.sum()
    got = simple_loss(logits, X, Z, MOVED, mask="moved", weight="elbo", alpha_t=alpha,
                      dalpha_t=dalpha)
    assert float(got) == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="alpha_t and dalpha_t"):
        simple_loss(logits, X, Z, MOVED, weight="elbo")


@pytest.mark.parametrize("mask", ["changed", "moved"])
def test_simple_loss_gradient_is_exactly_zero_off_the_mask(mask):
    logits = logits_fixture().requires_grad_()
    loss = simple_loss(logits, X, Z, MOVED, mask=mask)
    (grad,) = torch.autograd.grad(loss, logits)
    m = (Z != X) if mask == "changed" else MOVED
    assert (grad[~m] == 0).all()
    assert (grad[m].abs().sum(-1) > 0).all()


def test_simple_loss_is_zero_without_corruption_and_with_an_empty_mask():
    g = torch.Generator().manual_seed(1)
    x = torch.randint(V, (3, 6), generator=g)
    z, moved = q_sample(x, 1.0, V, generator=g)                        # alpha = 1: no noise
    logits = torch.randn(3, 6, V, generator=g, requires_grad=True)
    for mask in ("changed", "moved"):
        loss = simple_loss(logits, x, z, moved, mask=mask)
        assert float(loss.detach()) == 0.0
        (grad,) = torch.autograd.grad(loss, logits)
        assert (grad == 0).all()


def test_simple_loss_rejects_unknown_options_and_bad_ids_in_one_line():
    logits = logits_fixture()
    for kwargs in ({"mask": "noised"}, {"weight": "snr"}, {"normalize": "tokens"}):
        with pytest.raises(ValueError, match="unknown") as info:
            simple_loss(logits, X, Z, MOVED, **kwargs)
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match=r"outside \[0, 4\)"):
        simple_loss(logits, X + 1, Z, MOVED)


# ---- regulariser -------------------------------------------------------------------------

def test_regulariser_takes_its_uniform_values_at_uniform_logits():
    mask = torch.tensor([[True, False, True]])
    uniform = torch.zeros(1, 3, 7)
    log7 = math.log(7)
    assert float(uniform_regulariser(uniform, mask, kind="mean_logp")) == pytest.approx(-log7)
    assert float(uniform_regulariser(uniform, mask, kind="entropy")) == pytest.approx(log7)
    neg = uniform_regulariser(uniform, mask, kind="neg_sample", n_neg=3,
                              generator=torch.Generator().manual_seed(0))
    assert float(neg) == pytest.approx(-log7)


@pytest.mark.parametrize("kind", ["mean_logp", "entropy"])
def test_regulariser_is_largest_at_uniform_output(kind):
    g = torch.Generator().manual_seed(2)
    logits = 3 * torch.randn(4, 5, 6, generator=g, dtype=torch.float64)
    mask = torch.ones(4, 5, dtype=torch.bool)
    at_uniform = float(uniform_regulariser(torch.zeros_like(logits), mask, kind=kind))
    assert float(uniform_regulariser(logits, mask, kind=kind)) < at_uniform - 0.1


def test_regulariser_values_against_hand_computation_and_the_floor():
    logits = torch.tensor([[[0.0, -100.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0]]],
                          dtype=torch.float64)
    mask = torch.tensor([[True, True]])
    # position 0: p = (1/3, ~e^-100/3, 1/3, 1/3); log p_1 is floored at log 1e-6
    first = (3 * -math.log(3) + math.log(1e-6)) / 4
    p = np.exp([1.0, 2.0, 3.0, 4.0]) / np.exp([1.0, 2.0, 3.0, 4.0]).sum()
    second = float(np.log(p).mean())
    got = uniform_regulariser(logits, mask, kind="mean_logp")
    assert float(got) == pytest.approx((first + second) / 2, rel=1e-12)
    entropy_first = math.log(3)                                        # e^-100 terms vanish
    entropy_second = float(-(p * np.log(p)).sum())
    got = uniform_regulariser(logits, mask, kind="entropy")
    assert float(got) == pytest.approx((entropy_first + entropy_second) / 2, rel=1e-12)
    # only masked positions count; an empty mask gives 0
    only_second = uniform_regulariser(logits, torch.tensor([[False, True]]), kind="mean_logp")
    assert float(only_second) == pytest.approx(second, rel=1e-12)
    assert float(uniform_regulariser(logits, torch.zeros(1, 2, dtype=torch.bool))) == 0.0


def test_neg_sample_is_an_unbiased_estimate_of_mean_logp():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(2, 3, 5, generator=g, dtype=torch.float64)
    mask = torch.tensor([[True, True, False], [False, True, True]])
    exact = float(uniform_regulariser(logits, mask, kind="mean_logp"))
    draws = torch.stack([uniform_regulariser(logits, mask, kind="neg_sample", n_neg=8,
                                             generator=g) for _ in range(2000)])
    se = float(draws.std()) / math.sqrt(len(draws))
    assert abs(float(draws.mean()) - exact) < 4 * se
    assert float(draws.std()) > 0                                      # it is a sample


def test_regulariser_gradient_is_zero_off_the_mask():
    logits = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(4),
                         requires_grad=True)
    mask = torch.tensor([[True, False, True], [False, False, True]])
    for kind in ("mean_logp", "entropy", "neg_sample"):
        (grad,) = torch.autograd.grad(uniform_regulariser(logits, mask, kind=kind, n_neg=4),
                                      logits)
        assert (grad[~mask] == 0).all() and (grad[mask] != 0).any()
    with pytest.raises(ValueError, match="unknown kind"):
        uniform_regulariser(logits, mask, kind="kl")
