r"""The simple denoising loss on noise-replaced tokens and the regulariser against uniform output.

Zhu et al., "Simple Denoising Diffusion Language Models" (arXiv 2510.22926; ICML 2026,
PMLR v306 ``zhu26i``). Only the abstract is public: "a simplified denoising-based loss
that optimizes only noise-replaced tokens" and "an efficient regularization term to
mitigate corruption toward uniform output distributions". Every form below is therefore
**raystudy's reading** of the abstract, each choice a keyword argument.

Symbols: B sequences of length L over V tokens; x the clean ids, :math:`z_t` the noised
ids and ``moved`` the forward process's replacement indicator (``uniform.q_sample``);
:math:`p = \mathbf{x}_\theta(z_t, t) = \mathrm{softmax}(f_\theta)` the denoiser's output
per token; :math:`\mathrm{CE}_\ell = -\log p_\ell[x_\ell]`.

* **Simple loss** (raystudy's reading of the paper's Eq. 7, which is not public):

  .. math:: \mathcal{L}_\text{simple} = \frac{\sum_{b,\ell} w_b\, m_{b\ell}\,
            \mathrm{CE}_{b\ell}}{N}, \qquad
            N = \sum_{b,\ell} m_{b\ell}\ (\texttt{masked}) \text{ or } BL\ (\texttt{all}),

  with the mask :math:`m` either ``changed`` = :math:`1[z_t \ne x]` (the third-party
  ``sriramkv3010/sddlm`` reading) or ``moved`` (the replacement draw, which may land on
  x). CE on ``moved`` positions is minimised by the leave-one-out posterior
  :math:`p(x^\ell \mid z^{-\ell})`, the denoiser the plug-in sampler needs; CE on
  ``changed`` positions by :math:`p(x^\ell \mid z^{-\ell}, x^\ell \ne z^\ell)`, which
  learns never to return the observed token (raystudy's derivation, see
  ``docs/uniform_diffusion.md``). The weight :math:`w` is 1 (``none``) or the ELBO-style
  :math:`w = -\alpha'_t/(1-\alpha_t)` (``elbo``). The loss is 0 when ``masked`` and the
  mask is empty.
* **Regulariser** (raystudy's reading; added to the loss times ``reg_weight``), the mean
  over masked positions of one of

  * ``mean_logp``: :math:`\tfrac1V\sum_v \max(\log p_v, \log 10^{-6})`, i.e.
    :math:`-\mathrm{CE}(U, p)` with a floor that keeps it bounded below;
  * ``entropy``: :math:`H(p) = -\sum_v p_v \log p_v`;
  * ``neg_sample``: :math:`\tfrac{1}{n}\sum_{k=1}^{n} \max(\log p_{\hat v_k},
    \log 10^{-6})`, :math:`\hat v_k \sim U[V]`: the paper's v1 "negative gradients" as
    ``sriramkv3010/sddlm`` reads them, an unbiased estimate of ``mean_logp`` (the floor is
    raystudy's, so that both estimate the same quantity).

  Each is largest at uniform output (:math:`-\log V`, :math:`\log V`, :math:`-\log V` in
  expectation; for ``mean_logp`` by Jensen, with the floor below :math:`-\log V` for
  V < 10^6), so adding it to a minimised loss pushes :math:`p` away from uniform.

Shapes: ``logits`` (B, L, V); ``x``, ``z``, ``moved``, ``mask`` (B, L); alphas floats or
tensors broadcastable to (B, L), e.g. (B, 1).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from ._checks import as_alpha, check_choice, check_ids

MASKS = ("changed", "moved")
WEIGHTS = ("none", "elbo")
NORMALIZERS = ("masked", "all")
REGULARISERS = ("mean_logp", "entropy", "neg_sample")
LOG_FLOOR = math.log(1e-6)
"""The floor on :math:`\\log p_v` in ``mean_logp`` and ``neg_sample``."""


def _check_mask(mask: Tensor, shape: torch.Size, name: str) -> Tensor:
    if mask.shape != shape:
        raise ValueError(f"{name} of shape {tuple(mask.shape)} does not match {tuple(shape)}")
    return mask.bool()


def simple_loss(logits: Tensor, x: Tensor, z: Tensor, moved: Tensor, *, mask: str = "changed",
                weight: str = "none", normalize: str = "masked",
                alpha_t: float | Tensor | None = None,
                dalpha_t: float | Tensor | None = None) -> Tensor:
    r"""Cross-entropy of the clean token on noise-replaced positions (raystudy's reading).

    Args:
        logits: :math:`f_\theta(z_t, t)`, (B, L, V).
        x: clean ids, (B, L).
        z: noised ids :math:`z_t`, (B, L) (``mask="changed"`` compares it with x).
        moved: the replacement indicator from ``q_sample``, (B, L) (``mask="moved"``).
        mask: ``"changed"`` (:math:`z_t \ne x`, default) or ``"moved"``.
        weight: ``"none"`` (w = 1, default) or ``"elbo"`` (:math:`w=-\alpha'_t/(1-\alpha_t)`,
            needs ``alpha_t`` < 1 and ``dalpha_t``).
        normalize: ``"masked"`` (divide by the number of masked tokens, default; 0 when
            there are none) or ``"all"`` (divide by B L).
        alpha_t, dalpha_t: :math:`\alpha_t, \alpha'_t`, floats or tensors broadcastable
            to (B, L); used only by ``weight="elbo"``.

    Returns:
        A 0-dim tensor. Its gradient with respect to logits is exactly 0 off the mask.
    """
    check_choice(mask, MASKS, "mask")
    check_choice(weight, WEIGHTS, "weight")
    check_choice(normalize, NORMALIZERS, "normalize")
    V = logits.shape[-1]
    if logits.shape[:-1] != x.shape:
        raise ValueError(f"logits of shape {tuple(logits.shape)} do not match x of shape "
                         f"{tuple(x.shape)} plus a vocabulary axis")
    check_ids(x, V, "x")
    if mask == "changed":
        if z.shape != x.shape:
            raise ValueError(f"z of shape {tuple(z.shape)} does not match x of shape "
                             f"{tuple(x.shape)}")
        m = z != x
    else:
        m = _check_mask(moved, x.shape, "moved")
    ce = F.cross_entropy(logits.reshape(-1, V), x.reshape(-1).long(),
                         reduction="none").view(x.shape)
    # where(), not m * ce: off the mask the gradient is exactly 0 even where CE is infinite.
    per_token = torch.where(m, ce, torch.zeros_like(ce))
    if weight == "elbo":
        if alpha_t is None or dalpha_t is None:
            raise ValueError('weight="elbo" needs alpha_t and dalpha_t')
        a = as_alpha(alpha_t, x.shape, ce.dtype, ce.device, "alpha_t")
        da = as_alpha(dalpha_t, x.shape, ce.dtype, ce.device, "dalpha_t")
        per_token = per_token * (-da / (1 - a))                        # w = -alpha'/(1-alpha)
    if normalize == "masked":
        return per_token.sum() / m.sum().clamp_min(1)
    return per_token.sum() / x.numel()


def uniform_regulariser(logits: Tensor, mask: Tensor, *, kind: str = "mean_logp",
                        n_neg: int = 1, generator: torch.Generator | None = None) -> Tensor:
    r"""Mean over masked positions of a score that is largest at uniform output.

    Added to the loss times ``reg_weight`` (raystudy's reading of the paper's
    regulariser), it pushes the denoiser's output away from uniform.

    Args:
        logits: :math:`f_\theta`, (B, L, V).
        mask: (B, L) bool, the positions to average over (e.g. the simple loss's mask).
        kind: ``"mean_logp"`` (:math:`\tfrac1V\sum_v\log p_v`, floored at
            :math:`\log 10^{-6}`; default), ``"entropy"`` (:math:`H(p)`) or
            ``"neg_sample"`` (:math:`\log p` at ``n_neg`` uniform draws per position,
            floored the same way).
        n_neg: draws per position for ``neg_sample`` (default 1).
        generator: the torch generator for ``neg_sample``'s draws.

    Returns:
        A 0-dim tensor, 0 when the mask is empty; :math:`-\log V` (``mean_logp``,
        ``neg_sample``) or :math:`\log V` (``entropy``) at uniform logits.
    """
    check_choice(kind, REGULARISERS, "kind")
    m = _check_mask(mask, logits.shape[:-1], "mask")
    log_p = F.log_softmax(logits, dim=-1)
    if kind == "mean_logp":
        per_token = log_p.clamp_min(LOG_FLOOR).mean(-1)
    elif kind == "entropy":
        p = log_p.exp()
        per_token = -torch.where(p > 0, p * log_p, torch.zeros_like(p)).sum(-1)   # 0 log 0 = 0
    else:
        if n_neg < 1:
            raise ValueError(f"n_neg={n_neg} must be >= 1")
        draws = torch.randint(logits.shape[-1], (*m.shape, n_neg), generator=generator,
                              device=logits.device)
        per_token = log_p.clamp_min(LOG_FLOOR).gather(-1, draws).mean(-1)
    per_token = torch.where(m, per_token, torch.zeros_like(per_token))
    return per_token.sum() / m.sum().clamp_min(1)
