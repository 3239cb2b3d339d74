r"""Training objectives of the judge's DPO and RL stages, and raystudy's reading of its reward.

* **DPO** (Rafailov et al. 2023, "Direct Preference Optimization", Eq. 7): for a chosen
  :math:`y_c` and a rejected :math:`y_r` answer to the same input,

  .. math::
      \mathcal{L}_{DPO} = -\mathbb{E}\,\log\sigma\Big(\beta\big[(\log\pi_\theta(y_c)
      - \log\pi_{ref}(y_c)) - (\log\pi_\theta(y_r) - \log\pi_{ref}(y_r))\big]\Big),

  whose optimum under Bradley-Terry preferences with reward :math:`r` is
  :math:`\pi^* \propto \pi_{ref}\exp(r/\beta)` (their Eq. 4).
* **GRPO** (Shao et al. 2024, DeepSeekMath, Sec. 4.1; trl's ``GRPOTrainer``): ``G`` answers
  sampled per input, each advantage its reward standardised within its group,
  :math:`A_i = (r_i - \mathrm{mean}(r)) / (\mathrm{std}(r) + 10^{-4})` with Bessel's
  correction (trl's constant); the loss is PPO's clipped surrogate with an optional k3 KL
  penalty to a reference, :math:`\mathrm{KL} = e^{\log\pi_{ref} - \log\pi_\theta}
  - (\log\pi_{ref} - \log\pi_\theta) - 1`.
* **Judge reward** (FairJudge names its terms but not its form or weights; this is
  raystudy's reading):

  .. math::
      R = 1[v = y] + w_{swap}\,1[\text{swap-consistent}] + w_{mode}\,1[\text{pointwise agrees}]
          - w_{tie}\,1[v = \text{tie} \wedge y \ne \text{tie}],

  where the tie penalty stops a tie-always judge, which is swap-consistent by construction,
  from collecting the consistency terms.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _same_shape(tensors: dict[str, torch.Tensor]) -> None:
    (first, reference), *rest = tensors.items()
    for name, tensor in rest:
        if tensor.shape != reference.shape:
            raise ValueError(f"{name} has shape {tuple(tensor.shape)}, {first} has "
                             f"{tuple(reference.shape)}")


def dpo_loss(policy_chosen_logps: torch.Tensor, policy_rejected_logps: torch.Tensor,
             ref_chosen_logps: torch.Tensor, ref_rejected_logps: torch.Tensor,
             beta: float = 0.1) -> torch.Tensor:
    r"""DPO loss (module docstring, Eq. 7), a scalar: the mean over ``B`` pairs of
    :math:`-\log\sigma(\beta[(\pi_c - ref_c) - (\pi_r - ref_r)])`; every argument is ``B``
    log-probabilities of the chosen or rejected answer under the policy or the frozen
    reference."""
    _same_shape({"policy_chosen_logps": policy_chosen_logps,
                 "policy_rejected_logps": policy_rejected_logps,
                 "ref_chosen_logps": ref_chosen_logps,
                 "ref_rejected_logps": ref_rejected_logps})
    if not beta > 0:
        raise ValueError(f"beta={beta} must be > 0")
    margin = ((policy_chosen_logps - ref_chosen_logps)
              - (policy_rejected_logps - ref_rejected_logps))
    return -F.logsigmoid(beta * margin).mean()


def group_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """GRPO advantages, ``N``: each reward minus its group's mean over the group's std
    (Bessel's correction) + 1e-4. ``rewards`` is ``N = groups x group_size``, groups
    contiguous; a group whose rewards are all equal gets 0."""
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be 1-D (groups x group_size), got shape "
                         f"{tuple(rewards.shape)}")
    if group_size < 2 or rewards.numel() % group_size:
        raise ValueError(f"group_size={group_size} must be >= 2 and divide the "
                         f"{rewards.numel()} rewards")
    r = rewards.view(-1, group_size)
    mean = r.mean(dim=1, keepdim=True)
    std = r.std(dim=1, keepdim=True, correction=1)
    return ((r - mean) / (std + 1e-4)).view(-1)


def grpo_loss(logps: torch.Tensor, old_logps: torch.Tensor, advantages: torch.Tensor, *,
              clip: float = 0.2, ref_logps: torch.Tensor | None = None,
              beta: float = 0.0) -> torch.Tensor:
    r"""GRPO's clipped surrogate (module docstring), a scalar: the mean over ``N`` sampled
    answers of :math:`-[\min(\rho A, \mathrm{clip}(\rho, 1-\epsilon, 1+\epsilon) A) -
    \beta\,\mathrm{KL}]`, :math:`\rho = \exp(\log\pi_\theta - \log\pi_{old})`. ``logps``,
    ``old_logps``, ``advantages`` and ``ref_logps`` (needed when ``beta > 0``) are ``N``."""
    tensors = {"logps": logps, "old_logps": old_logps, "advantages": advantages}
    if ref_logps is not None:
        tensors["ref_logps"] = ref_logps
    _same_shape(tensors)
    if not clip > 0 or not beta >= 0:
        raise ValueError(f"clip={clip} must be > 0 and beta={beta} >= 0")
    ratio = torch.exp(logps - old_logps.detach())
    surrogate = torch.minimum(ratio * advantages,
                              ratio.clamp(1 - clip, 1 + clip) * advantages)
    if beta > 0:
        if ref_logps is None:
            raise ValueError(f"beta={beta} > 0 needs ref_logps")
        log_ratio = ref_logps.detach() - logps
        surrogate = surrogate - beta * (torch.exp(log_ratio) - log_ratio - 1)
    return -surrogate.mean()


def judge_reward(v: torch.Tensor, label: torch.Tensor, v_swapped: torch.Tensor,
                 scores: torch.Tensor, *, w_swap: float = 0.5, w_mode: float = 0.5,
                 w_tie: float = 0.5) -> torch.Tensor:
    r"""Reward per sampled verdict (module docstring), ``N`` floats.

    Args:
        v: ``N`` verdicts (0 first, 1 second, 2 tie) on the pairs as shown.
        label: ``N`` reference verdicts.
        v_swapped: ``N`` verdicts on the same pairs swapped (consistent: 0 <-> 1, 2 = 2).
        scores: ``N x 2`` pointwise scores of the first and second response; they agree
            when :math:`\mathrm{sign}(s_1 - s_2)` gives ``v`` (equal scores: a tie).
        w_swap, w_mode, w_tie: the weights of the consistency terms and the tie penalty
            (defaults 0.5; not published, set by the study's config).
    """
    _same_shape({"v": v, "label": label, "v_swapped": v_swapped})
    if scores.shape != (v.shape[0], 2) or v.dim() != 1:
        raise ValueError(f"scores has shape {tuple(scores.shape)}, expected "
                         f"({v.shape[0] if v.dim() else 'N'}, 2) for v of shape "
                         f"{tuple(v.shape)}")
    mirror = torch.tensor([1, 0, 2], device=v.device)
    consistent = v_swapped == mirror[v.long()]
    implied = torch.where(scores[:, 0] > scores[:, 1], 0,
                          torch.where(scores[:, 0] < scores[:, 1], 1, 2))
    spurious_tie = (v == 2) & (label != 2)
    return ((v == label).float() + w_swap * consistent.float()
            + w_mode * (implied == v).float() - w_tie * spurious_tie.float())
