"""BC, DemoDICE, SafeDICE, DWBC: each loss on hand-computed values, clipping, one update."""

from __future__ import annotations

import math

import pytest
import torch
from imitation_helpers import batch, params, same

from raystudy.algorithms.imitation.bc import BC, BCConfig, bc_loss
from raystudy.algorithms.imitation.demodice import DemoDICE, DemoDICEConfig, demodice_reward
from raystudy.algorithms.imitation.dice import dice_weights, dual_loss, gradient_penalty
from raystudy.algorithms.imitation.dualcoil import DualCOIL, DualCOILConfig
from raystudy.algorithms.imitation.dwbc import (
    DWBC,
    DWBCConfig,
    dwbc_discriminator_loss,
    dwbc_policy_loss,
)
from raystudy.algorithms.imitation.safedice import SafeDICE, SafeDICEConfig, safedice_reward

SMALL = (16, 16)


def with_all(b: dict) -> dict:
    b["all"] = {k: torch.cat([b["good"][k], b["unlabeled"][k]]) for k in b["good"]}
    return b


def test_bc_loss_and_training_raise_the_likelihood():
    assert float(bc_loss(torch.tensor([-1.0, -3.0]))) == 2.0
    torch.manual_seed(0)
    learner = BC(3, 2, "good", BCConfig(hidden=SMALL, lr=1e-2))
    b = batch()
    first = learner.update(b)["train/actor_loss"]
    for _ in range(100):
        last = learner.update(b)["train/actor_loss"]
    assert last < first - 1.0
    assert BC(3, 2, "all").sources == ("all",)
    with pytest.raises(ValueError, match="expected 'good', 'all' or 'oracle'"):
        BC(3, 2, "bad")


def test_dice_dual_loss_and_weights_by_hand():
    nu0, adv = torch.tensor([1.0, 3.0]), torch.tensor([0.0, math.log(2.0)])
    # (1 - 0.9) * mean(nu0) + log mean(exp(adv)) = 0.2 + log 1.5
    assert float(dual_loss(nu0, adv, 0.9)) == pytest.approx(0.2 + math.log(1.5))
    # T = 2: 0.2 + 2 log mean(exp(adv / 2)) = 0.2 + 2 log((1 + sqrt 2) / 2)
    assert float(dual_loss(nu0, adv, 0.9, 2.0)) == pytest.approx(
        0.2 + 2 * math.log((1 + math.sqrt(2)) / 2))
    torch.testing.assert_close(dice_weights(adv), torch.tensor([2 / 3, 4 / 3]))
    torch.testing.assert_close(dice_weights(adv + 100.0), torch.tensor([2 / 3, 4 / 3]))


def test_gradient_penalty_of_a_linear_function():
    def f(x):
        return (x * torch.tensor([3.0, 4.0])).sum(-1)  # ||grad|| = 5 everywhere

    x = torch.randn(6, 2)
    assert float(gradient_penalty(f, x, 1.0)) == pytest.approx(16.0)
    assert float(gradient_penalty(f, x, 0.0)) == pytest.approx(25.0)


def test_demodice_reward_is_the_log_density_ratio():
    c = torch.tensor([0.8, 0.5, 0.2])
    expected = torch.log(torch.tensor([4.0, 1.0, 0.25]))  # -log(1/c - 1) = log(c / (1 - c))
    torch.testing.assert_close(demodice_reward(torch.logit(c)), expected)
    assert torch.isfinite(demodice_reward(torch.tensor([1e4, -1e4]))).all()


def test_safedice_reward_by_hand_and_clipped_below_the_pole():
    # c = 0.2, alpha = 0.5: log((1 - 0.3) / (0.5 * 0.8)) = log 1.75
    assert float(safedice_reward(torch.tensor([0.2]), 0.5)) == pytest.approx(math.log(1.75))
    # With d_N / d_U = rho, c = rho / (1 + rho) and d_P / d_U = (1 - alpha rho) / (1 - alpha)
    rho, alpha = 0.5, 0.5
    assert float(safedice_reward(torch.tensor([rho / (1 + rho)]), alpha)) == pytest.approx(
        math.log((1 - alpha * rho) / (1 - alpha)))
    top = (1 - 1e-3) / 1.5  # c clipped there: finite, very negative
    clipped = safedice_reward(torch.tensor([0.9, 0.99]), 0.5)
    torch.testing.assert_close(clipped, torch.full((2,), math.log(1e-3 / (0.5 * (1 - top)))))
    with pytest.raises(ValueError, match=r"alpha=1.0 must lie in \(0, 1\)"):
        SafeDICEConfig(alpha=1.0)


def test_dwbc_losses_by_hand_and_discriminator_clip():
    d_e, d_o = torch.tensor([0.8]), torch.tensor([0.2])
    # 0.5 (-log 0.8) - log(1 - 0.2) - 0.5 (-log(1 - 0.8))
    expected = 0.5 * -math.log(0.8) - math.log(0.8) + 0.5 * math.log(0.2)
    assert float(dwbc_discriminator_loss(d_e, d_o, 0.5)) == pytest.approx(expected)
    # alpha * 1 - (1 * 0.5 / 0.25) + (2 / 0.5) = 10 - 2 + 4
    loss = dwbc_policy_loss(torch.tensor([-1.0]), torch.tensor([-2.0]), torch.tensor([0.5]),
                            torch.tensor([0.5]), alpha=10.0, eta=0.5)
    assert float(loss) == pytest.approx(12.0)
    learner = DWBC(3, 2, DWBCConfig(hidden=SMALL))
    with torch.no_grad():
        learner.disc.f[-1].bias.fill_(50.0)
    b = batch()
    out = learner.discriminate(b["good"], torch.full((8,), -1e6))
    assert torch.equal(out, torch.full((8,), 0.9))


def test_safedice_standardises_by_the_whole_unlabeled_sets_reward_not_the_minibatch():
    # alpha = 0.25; c = 0.2, 0.5, 0.1, 0.4 give d_P / d_U = (1 - 1.25 c) / (0.75 (1 - c)):
    # 0.75 / 0.6, 0.375 / 0.375, 0.875 / 0.675, 0.5 / 0.45
    expected = [math.log(5 / 4), 0.0, math.log(35 / 27), math.log(10 / 9)]
    c = torch.tensor([0.2, 0.5, 0.1, 0.4])
    assert safedice_reward(c, 0.25).tolist() == pytest.approx(expected, abs=1e-6)
    safe = SafeDICE(3, 2, SafeDICEConfig(alpha=0.25, hidden=SMALL, pretrain_steps=0))
    safe.disc = torch.nn.Linear(5, 1)  # logit = first input: c = sigmoid(s_0)
    with torch.no_grad():
        safe.disc.weight.copy_(torch.tensor([[1.0, 0, 0, 0, 0]]))
        safe.disc.bias.zero_()
    rows = torch.zeros(4, 5)
    rows[:, 0] = torch.log(c / (1 - c))
    b = batch()
    b["unlabeled"] = {k: v[:2] for k, v in b["unlabeled"].items()}
    b["unlabeled"]["observations"], b["unlabeled"]["actions"] = rows[:2, :3], rows[:2, 3:]
    with pytest.raises(RuntimeError, match="call use_unlabeled"):
        safe.update(b)
    safe.use_unlabeled(rows)
    mean = sum(expected) / 4
    std = math.sqrt(sum((r - mean) ** 2 for r in expected) / 4)  # ddof 0, as np.std
    assert safe.dataset_statistics() == pytest.approx((mean, std), abs=1e-6)
    seen = {}
    safe.dual_and_policy_step = lambda part, reward, initial, t: seen.update(r=reward) or {}
    losses = safe.update(b)
    # the minibatch's two rewards, standardised by the four rows' statistics
    assert seen["r"].tolist() == pytest.approx([(r - mean) / std for r in expected[:2]],
                                               abs=1e-5)
    assert losses["train/alpha"] == 0.25
    assert losses["train/reward"] == pytest.approx(sum(expected[:2]) / 2, abs=1e-6)
    raw = SafeDICE(3, 2, SafeDICEConfig(alpha=0.25, hidden=SMALL, pretrain_steps=0,
                                        standardise=False))
    raw.disc, raw.dual_and_policy_step = safe.disc, safe.dual_and_policy_step
    raw.update(b)  # needs no unlabeled set: the raw reward
    assert seen["r"].tolist() == pytest.approx(expected[:2], abs=1e-6)


def safedice(config: SafeDICEConfig, b: dict) -> SafeDICE:
    """A SafeDICE learner that standardises over ``b``'s unlabeled rows."""
    learner = SafeDICE(3, 2, config)
    learner.use_unlabeled(torch.cat([b["unlabeled"]["observations"],
                                     b["unlabeled"]["actions"]], -1))
    return learner


def test_safedice_freezes_its_discriminator_and_demodice_keeps_training_it():
    b = with_all(batch())
    safe = safedice(SafeDICEConfig(hidden=SMALL, pretrain_steps=2), b)
    assert set(safe.update(b)) == {"train/disc_loss"}
    safe.update(b)
    frozen = params(safe.disc)
    losses = safe.update(b)
    assert same(frozen, params(safe.disc)) and {"train/nu_loss", "train/actor_loss"} <= set(losses)
    demo = DemoDICE(3, 2, DemoDICEConfig(hidden=SMALL, pretrain_steps=1))
    assert set(demo.update(b)) == {"train/disc_loss"}
    before = params(demo.disc)
    assert {"train/nu_loss", "train/actor_loss", "train/disc_loss"} <= set(demo.update(b))
    assert not same(before, params(demo.disc))


LEARNERS = {
    "bc": lambda: BC(3, 2, "good", BCConfig(hidden=SMALL)),
    "demodice": lambda: DemoDICE(3, 2, DemoDICEConfig(hidden=SMALL)),
    "safedice": lambda: safedice(SafeDICEConfig(hidden=SMALL, pretrain_steps=1), batch()),
    "dwbc": lambda: DWBC(3, 2, DWBCConfig(hidden=SMALL)),
    "dualcoil": lambda: DualCOIL(3, 2, DualCOILConfig(hidden=SMALL, pretrain_steps=1)),
}


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_every_learner_has_the_same_interface(name):
    torch.manual_seed(0)
    learner = LEARNERS[name]()
    b = with_all(batch())
    actor0 = params(learner.actor)
    for _ in range(3):
        losses = learner.update(b)
    assert losses and all(k.startswith("train/") and math.isfinite(v) for k, v in losses.items())
    assert not same(actor0, params(learner.actor))
    clone = LEARNERS[name]()
    clone.load_state_dict(learner.state_dict())
    obs = torch.randn(4, 3).numpy()
    assert (clone.act(obs) == learner.act(obs)).all() and clone.steps == 3
    stochastic = learner.act(obs, deterministic=False)
    assert stochastic.shape == (4, 2) and abs(stochastic).max() <= 1.0
