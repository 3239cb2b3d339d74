"""DPO against its formula and its closed-form optimum on a tabular bandit; GRPO advantages
and loss, and the judge reward, by hand."""

from __future__ import annotations

import math

import pytest
import torch

from raystudy.algorithms.judging import dpo_loss, group_advantages, grpo_loss, judge_reward


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dpo_loss_is_the_formula_written_out(dtype):
    pc, pr = [-1.0, -0.2, -3.0], [-2.0, -0.1, -0.5]
    rc, rr = [-1.5, -0.3, -2.0], [-1.0, -0.4, -1.0]
    beta = 0.7
    expected = sum(-math.log(_sigmoid(beta * ((pc[i] - rc[i]) - (pr[i] - rr[i]))))
                   for i in range(3)) / 3
    t_pc, t_pr, t_rc, t_rr = (torch.tensor(x, dtype=dtype) for x in (pc, pr, rc, rr))
    loss = dpo_loss(t_pc, t_pr, t_rc, t_rr, beta=beta)
    assert loss.dtype == dtype
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    # equal margins give log 2 whatever beta
    zero = torch.zeros(4, dtype=dtype)
    assert dpo_loss(zero, zero, zero, zero).item() == pytest.approx(math.log(2), rel=1e-6)


def test_dpo_on_a_tabular_bandit_recovers_the_closed_form_optimum(one_thread):
    generator = torch.Generator().manual_seed(0)
    n_actions, beta, n_pairs = 5, 1.0, 30_000
    log_ref = torch.log(torch.tensor([0.4, 0.3, 0.15, 0.1, 0.05], dtype=torch.float64))
    r = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0], dtype=torch.float64)
    # preference pairs from a Bradley-Terry model with reward r, actions drawn uniformly
    a = torch.randint(0, n_actions, (n_pairs,), generator=generator)
    b = (a + torch.randint(1, n_actions, (n_pairs,), generator=generator)) % n_actions
    u = torch.rand(n_pairs, generator=generator, dtype=torch.float64)
    a_wins = u < torch.sigmoid(r[a] - r[b])
    chosen, rejected = torch.where(a_wins, a, b), torch.where(a_wins, b, a)
    theta = log_ref.clone().requires_grad_(True)        # the policy starts at the reference
    optimizer = torch.optim.Adam([theta], lr=0.05)
    for _ in range(400):
        log_pi = torch.log_softmax(theta, 0)
        loss = dpo_loss(log_pi[chosen], log_pi[rejected], log_ref[chosen], log_ref[rejected],
                        beta=beta)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    pi = torch.softmax(theta.detach(), 0)
    pi_star = torch.softmax(log_ref + r / beta, 0)      # pi* proportional to pi_ref exp(r / beta)
    assert (pi - pi_star).abs().max() < 0.02, (pi, pi_star)
    assert (pi_star - torch.exp(log_ref)).abs().max() > 0.1     # it had somewhere to go


def test_group_advantages_by_hand():
    rewards = torch.tensor([1.0, 2.0, 3.0, 5.0, 5.0, 5.0, 0.0, 4.0, 0.0, 4.0])
    with pytest.raises(ValueError, match="^group_size"):
        group_advantages(rewards, 3)
    advantages = group_advantages(rewards[:6], 3)
    # group (1, 2, 3): mean 2, Bessel std 1; group (5, 5, 5): constant, all 0
    expected = [-1 / 1.0001, 0.0, 1 / 1.0001, 0.0, 0.0, 0.0]
    assert advantages.tolist() == pytest.approx(expected, abs=1e-6)
    # pairs (0, 4): mean 2, Bessel std sqrt(8)
    pairs = group_advantages(rewards[6:], 2)
    a = 2 / (math.sqrt(8) + 1e-4)
    assert pairs.tolist() == pytest.approx([-a, a, -a, a], rel=1e-6)


def test_grpo_loss_by_hand():
    advantages = torch.tensor([1.0, -1.0, 0.5, 0.0])
    logps = torch.tensor([-0.5, -1.0, -2.0, -0.3], requires_grad=True)
    loss = grpo_loss(logps, logps.detach(), advantages)        # on-policy: ratio 1
    assert loss.item() == pytest.approx(-0.5 / 4)
    loss.backward()
    assert logps.grad.tolist() == pytest.approx((-advantages / 4).tolist())
    # ratio 2: clipped to 1.2 when A > 0, unclipped (the pessimistic side) when A < 0
    new = torch.log(torch.tensor([2.0, 2.0]))
    old = torch.zeros(2)
    assert grpo_loss(new, old, torch.tensor([1.0, -1.0])).item() == pytest.approx((-1.2 + 2) / 2)
    # the k3 KL to a reference with pi_ref = 2 pi: 2 - log 2 - 1
    ref = torch.log(torch.tensor([0.4]))
    kl_only = grpo_loss(torch.log(torch.tensor([0.2])), torch.log(torch.tensor([0.2])),
                        torch.zeros(1), ref_logps=ref, beta=0.1)
    assert kl_only.item() == pytest.approx(0.1 * (2 - math.log(2) - 1), rel=1e-5)


def test_judge_reward_by_hand():
    v = torch.tensor([0, 1, 2, 2, 0])
    label = torch.tensor([0, 0, 2, 1, 1])
    v_swapped = torch.tensor([1, 1, 2, 2, 0])
    scores = torch.tensor([[8, 3], [5, 5], [4, 4], [2, 9], [7, 1]])
    reward = judge_reward(v, label, v_swapped, scores, w_swap=0.5, w_mode=0.25, w_tie=1.0)
    # 0: right + consistent + mode agrees; 1: nothing; 2: a right tie, consistent, mode
    # agrees; 3: a tie on a decisive label, consistent (penalised); 4: only the mode agrees
    assert reward.tolist() == pytest.approx([1.75, 0.0, 1.75, -0.5, 0.25])
    plain = judge_reward(v, label, v_swapped, scores, w_swap=0.0, w_mode=0.0, w_tie=0.0)
    assert plain.tolist() == [1.0, 0.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize(("call", "name"), [
    (lambda: dpo_loss(torch.zeros(3), torch.zeros(2), torch.zeros(3), torch.zeros(3)),
     "policy_rejected_logps"),
    (lambda: dpo_loss(torch.zeros(3), torch.zeros(3), torch.zeros(3), torch.zeros(3), beta=0),
     "beta"),
    (lambda: group_advantages(torch.zeros(5), 2), "group_size"),
    (lambda: group_advantages(torch.zeros(4), 1), "group_size"),
    (lambda: grpo_loss(torch.zeros(2), torch.zeros(2), torch.zeros(3)), "advantages"),
    (lambda: judge_reward(torch.zeros(2, dtype=torch.long), torch.zeros(3, dtype=torch.long),
                          torch.zeros(2, dtype=torch.long), torch.zeros(2, 2)), "label"),
    (lambda: judge_reward(torch.zeros(2, dtype=torch.long), torch.zeros(2, dtype=torch.long),
                          torch.zeros(2, dtype=torch.long), torch.zeros(2, 3)), "scores"),
])
def test_bad_input_is_one_line_naming_the_argument(call, name):
    with pytest.raises(ValueError) as error:
        call()
    message = str(error.value)
    assert message.startswith(name) and "\n" not in message
