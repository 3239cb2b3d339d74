"""DualCOIL: each loss on hand-computed values, the clipping, the alpha check, one update."""

from __future__ import annotations

import math

import pytest
import torch
from imitation_helpers import batch, params, same

from raystudy.algorithms.imitation.dualcoil import (
    DualCOIL,
    DualCOILConfig,
    check_alpha,
    gumbel_value_loss,
    iq_critic_loss,
    q_weighted_bc_loss,
    unlabeled_weight,
)
from raystudy.algorithms.imitation.nets import Discriminator, binary_loss


@pytest.mark.parametrize("alpha, why", [
    (1.2, "above 1 the objective .* is not convex"),
    (1.0, r"at 1 the weight's exponent 1/\(1 - alpha\) is undefined"),
    (-0.1, "below 0"),
    (float("nan"), "not a number"),
])
def test_alpha_outside_unit_interval_is_one_line_with_the_reason(alpha, why):
    with pytest.raises(ValueError, match=why) as info:
        check_alpha(alpha)
    assert "outside [0, 1)" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValueError, match=why):
        DualCOILConfig(alpha=alpha)
    assert check_alpha(0.0) == 0.0 and check_alpha(0.6) == 0.6


def test_unlabeled_weight_by_hand_and_clipped_at_c():
    d_good = torch.tensor([0.9, 0.5, 0.05])
    d_bad = torch.tensor([0.1, 0.5, 0.95])
    w = unlabeled_weight(d_good, d_bad, alpha=0.5, c=3.0)
    # exp((log(c g) - 0.5 log(c b)) / 0.5) = (c g)^2 / (c b)
    expected = [min(2.7**2 / 0.3, 3.0), 1.5**2 / 1.5, 0.15**2 / 2.85]
    torch.testing.assert_close(w, torch.tensor(expected))
    assert w[0] == 3.0  # clipped at c
    # alpha = 0: w = c D_G, no repulsion
    torch.testing.assert_close(unlabeled_weight(d_good, d_bad, 0.0, 3.0),
                               torch.tensor([2.7, 1.5, 0.15]).clamp(max=3.0))


def test_discriminator_output_is_clipped_with_no_gradient_beyond():
    disc = Discriminator(2, hidden=(4,))
    with torch.no_grad():
        disc.f[-1].bias.fill_(100.0)
    x = torch.zeros(3, 2, requires_grad=True)
    out = disc(x)
    assert torch.equal(out, torch.full((3,), 0.95))
    out.sum().backward()
    assert torch.count_nonzero(x.grad) == 0
    with torch.no_grad():
        disc.f[-1].bias.fill_(-100.0)
    assert torch.equal(disc(x), torch.full((3,), 0.05))
    # -mean(log 0.95) - mean(log(1 - 0.05)) = -2 log 0.95
    assert float(binary_loss(torch.full((2,), 0.95), torch.full((2,), 0.05))) == \
        pytest.approx(-2 * math.log(0.95))


def test_gumbel_value_loss_by_hand():
    q, v = torch.tensor([1.0, 3.0]), torch.tensor([0.0, 0.0])
    # z = [1, 3], m = 3: mean(e^{z-3} - z e^{-3} - e^{-3})
    e3 = math.exp(-3)
    expected = ((math.exp(-2) - e3 - e3) + (1 - 3 * e3 - e3)) / 2
    assert float(gumbel_value_loss(q, v, beta=1.0)) == pytest.approx(expected)
    # beta = 2 halves z; z is clipped at 7 and m = max(z, -1)
    assert float(gumbel_value_loss(torch.tensor([100.0]), torch.tensor([0.0]), 1.0)) == \
        pytest.approx(1 - 8 * math.exp(-7))
    low = gumbel_value_loss(torch.tensor([-10.0]), torch.tensor([0.0]), 2.0)  # z=-5, m=-1
    assert float(low) == pytest.approx(math.exp(-4) + 5 * math.e - math.e)
    # Gradient in V: e^{-m} d/dv (e^z - z - 1) = e^{-m} (1 - e^z) / beta
    v = torch.tensor([0.0], requires_grad=True)
    gumbel_value_loss(torch.tensor([1.0]), v, 1.0).backward()
    assert float(v.grad) == pytest.approx(math.exp(-1) * (1 - math.e))


def test_iq_critic_loss_by_hand_and_its_minimiser_is_r_equals_w():
    q, target, w = torch.tensor([1.0, 2.0]), torch.tensor([0.5, 0.5]), torch.tensor([3.0, -1.0])
    # r = [0.5, 1.5]; mean(-w r) = (-1.5 + 1.5)/2 = 0; 0.5 mean(r^2) = 0.625
    assert float(iq_critic_loss(q, target, w)) == pytest.approx(0.625)
    free = torch.zeros(2, requires_grad=True)
    opt = torch.optim.SGD([free], lr=0.5)
    for _ in range(200):
        opt.zero_grad()
        iq_critic_loss(free, target, w).backward()
        opt.step()
    torch.testing.assert_close(free.detach() - target, w)


def test_q_weighted_bc_loss_by_hand_with_weight_clip():
    log_prob, q = torch.tensor([-1.0, -2.0]), torch.tensor([0.0, 10.0])
    # weights [e^0, min(e^5, 100)] = [1, 100]; loss = -(1 * -1 + 100 * -2) / 2
    assert float(q_weighted_bc_loss(log_prob, q, 0.5, 100.0)) == pytest.approx(100.5)
    q = torch.tensor([1.0, 2.0], requires_grad=True)
    log_prob = log_prob.clone().requires_grad_(True)
    q_weighted_bc_loss(log_prob, q, 0.5).backward()
    assert q.grad is None  # the weights carry no gradient into Q
    torch.testing.assert_close(log_prob.grad, -torch.exp(0.5 * q.detach()) / 2)


def test_update_pretrains_discriminators_then_trains_everything():
    torch.manual_seed(0)
    config = DualCOILConfig(hidden=(16, 16), pretrain_steps=2, alpha=0.4)
    learner = DualCOIL(3, 2, config)
    b = batch()
    actor0, disc0 = params(learner.actor), params(learner.d_good)
    losses = learner.update(b)
    assert set(losses) == {"train/d_good_loss", "train/d_bad_loss"}
    assert same(actor0, params(learner.actor)) and not same(disc0, params(learner.d_good))
    learner.update(b)
    w = learner.weights(b)
    torch.testing.assert_close(w[:16], torch.tensor([-3.0 * 0.4] * 8 + [3.0] * 8))
    assert w[16:].min() >= 0 and w[16:].max() <= 3.0
    target0, critic0, disc1 = params(learner.target_critic), params(learner.critic), \
        params(learner.d_good)
    losses = learner.update(b)
    assert {"train/value_loss", "train/actor_loss", "train/critic_loss",
            "train/w_unlabeled_expert", "train/w_unlabeled_other"} <= set(losses)
    assert all(math.isfinite(v) for v in losses.values())
    assert same(disc1, params(learner.d_good))  # frozen after pre-training
    for t0, c_new, t_new in zip(target0, params(learner.critic), params(learner.target_critic),
                                strict=True):
        torch.testing.assert_close(t_new, 0.995 * t0 + 0.005 * c_new)
    assert not same(critic0, params(learner.critic))


def test_state_dict_round_trip_gives_the_same_actions():
    learner = DualCOIL(3, 2, DualCOILConfig(hidden=(8,), pretrain_steps=0))
    for _ in range(3):
        learner.update(batch())
    other = DualCOIL(3, 2, DualCOILConfig(hidden=(8,), pretrain_steps=0))
    other.load_state_dict(learner.state_dict())
    obs = torch.randn(5, 3).numpy()
    assert (learner.act(obs) == other.act(obs)).all() and other.steps == 3
    assert learner.act(obs).shape == (5, 2) and abs(learner.act(obs)).max() <= 1
