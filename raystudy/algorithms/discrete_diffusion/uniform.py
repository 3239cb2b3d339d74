r"""Uniform-state discrete diffusion: forward process, posterior and the UDLM NELBO.

Symbols: V the vocabulary size; a sequence :math:`x \in [V]^L` (B sequences of length L
in a batch); one-hot vectors :math:`\mathbf{x}, \mathbf{z}_t \in \{0,1\}^V` per token;
:math:`\mathbf{1}` the all-ones vector; a schedule :math:`\alpha_t` (``schedules.py``) with
derivative :math:`\alpha'_t`; :math:`s < t` so :math:`\alpha_s > \alpha_t`, and
:math:`\alpha_{t|s} = \alpha_t / \alpha_s`. Every token is corrupted independently.

* **Forward process** (Schiff et al. 2024, UDLM, arXiv 2412.10193; as ``s-sahoo/duo``
  ``UniformState.q_xt``): with probability :math:`1 - \alpha_t` a token is *moved*, i.e.
  replaced by a uniform draw over all V tokens, which may land on x itself:

  .. math:: q(\mathbf{z}_t \mid \mathbf{x}) = \mathrm{Cat}\big(\alpha_t \mathbf{x}
            + (1 - \alpha_t)\mathbf{1}/V\big).

* **Posterior** (UDLM; Bayes' rule with
  :math:`q(\mathbf{z}_t \mid \mathbf{z}_s) = \mathrm{Cat}(\alpha_{t|s}\mathbf{z}_s
  + (1 - \alpha_{t|s})\mathbf{1}/V)`):

  .. math:: q(\mathbf{z}_s \mid \mathbf{z}_t, \mathbf{x}) = \mathrm{Cat}\Big(
      \frac{V\alpha_t\, \mathbf{z}_t \odot \mathbf{x} + (\alpha_{t|s} - \alpha_t)\mathbf{z}_t
      + (\alpha_s - \alpha_t)\mathbf{x}
      + \frac{(\alpha_s - \alpha_t)(1 - \alpha_s)}{V\alpha_s}\mathbf{1}}
      {V\alpha_t \langle \mathbf{z}_t, \mathbf{x}\rangle + 1 - \alpha_t}\Big).

  For a probability vector :math:`\mathbf{x}` (the denoiser's :math:`\mathbf{x}_\theta`)
  it is Bayes' rule with the prior :math:`\mathbf{x}` on the clean token, the plug-in
  posterior of ancestral sampling.

* **NELBO integrand** (UDLM's continuous-time ELBO; written here from the limit below, the
  reference the tests check it against). With
  :math:`\bar{\mathbf{x}} = V\alpha_t\mathbf{x} + (1-\alpha_t)\mathbf{1}` and
  :math:`\bar{\mathbf{x}}_\theta = V\alpha_t\mathbf{x}_\theta + (1-\alpha_t)\mathbf{1}`
  (both sum to V), and :math:`i` the index of :math:`\mathbf{z}_t`,

  .. math:: \ell(\mathbf{x}_\theta; \mathbf{z}_t, \mathbf{x}, t) =
      \frac{-\alpha'_t}{V\alpha_t}\Big[\frac{V}{\bar x_{\theta,i}} - \frac{V}{\bar x_i}
      + \frac{1}{\bar x_i}\Big(\sum_v \bar x_v \log\bar x_v - \sum_v \bar x_v \log
      \bar x_{\theta,v}\Big) + \frac{V}{\bar x_i}\log\frac{\bar x_{\theta,i}}{\bar x_i}\Big],

  in nats per token, so that
  :math:`\mathbb{E}_{\mathbf{z}_t \sim q(\cdot\mid\mathbf{x})}\,\ell =
  \lim_{\Delta\to 0} \mathbb{E}\,\mathrm{KL}\big(q(\mathbf{z}_s\mid\mathbf{z}_t,\mathbf{x})
  \,\|\, q(\mathbf{z}_s\mid\mathbf{z}_t,\mathbf{x}_\theta)\big)/\Delta` with
  :math:`\alpha_s = \alpha_t - \alpha'_t\Delta`. Derivation: for :math:`v \ne i` the
  posterior is :math:`\delta\,\bar x_v / (V\alpha_t \bar x_i) + O(\delta^2)`,
  :math:`\delta = \alpha_s - \alpha_t`, so KL/δ tends to the generalised KL
  :math:`\sum_{v\ne i} a_v\log(a_v/b_v) - a_v + b_v \ge 0` between those rates. It is 0
  at :math:`\mathbf{x}_\theta = \mathbf{x}` and costs O(V) per token (the sum of
  :math:`\log\bar x_{\theta,v}`), the overhead the simple loss avoids. The time integral
  :math:`\int_0^1 \mathbb{E}\,\ell\,dt` plus the prior and reconstruction terms bounds
  :math:`-\log p_\theta(x)` per token.

Shapes: ``x`` and ``z`` are (B, L) (any shape works) integer ids in [0, V); alphas are a
float or a tensor broadcastable to that shape, e.g. (B, 1) for one time per sequence;
``x_probs`` and ``log_x_theta`` are (B, L, V).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ._checks import as_alpha, check_ids


def q_sample(x: Tensor, alpha_t: float | Tensor, vocab_size: int,
             generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    r"""Draw :math:`z_t \sim q(\cdot \mid x)`: move each token w.p. :math:`1-\alpha_t`.

    Args:
        x: clean token ids, (B, L) (any shape), in [0, V).
        alpha_t: :math:`\alpha_t` in [0, 1], a float or a tensor broadcastable to x's
            shape (e.g. (B, 1)).
        vocab_size: V.
        generator: the torch generator for both draws (``None``: the global one).

    Returns:
        ``(z, moved)``: z (long, x's shape) and ``moved`` (bool), True where the token was
        replaced by a uniform draw over all V tokens (which may equal x: a moved token is
        unchanged w.p. 1/V).
    """
    check_ids(x, vocab_size, "x")
    alpha = as_alpha(alpha_t, x.shape, torch.float64, x.device)
    if alpha.numel() and (alpha.min() < 0 or alpha.max() > 1):
        raise ValueError(f"alpha_t must be in [0, 1], got range [{float(alpha.min())}, "
                         f"{float(alpha.max())}]")
    u = torch.rand(x.shape, generator=generator, dtype=torch.float64, device=x.device)
    moved = u < 1 - alpha
    replacement = torch.randint(vocab_size, x.shape, generator=generator, device=x.device)
    z = torch.where(moved, replacement, x.long())
    return z, moved


def posterior(x_probs: Tensor, z: Tensor, alpha_s: float | Tensor,
              alpha_t: float | Tensor) -> Tensor:
    r"""The UDLM posterior :math:`q(z_s \mid z_t = z, \mathbf{x})` in closed form.

    Args:
        x_probs: :math:`\mathbf{x}`, (..., V): one-hot clean tokens or a probability
            vector such as the denoiser's :math:`\mathbf{x}_\theta`; its floating dtype is
            kept (pass float64 to sample as Duo does, ``use_float64``).
        z: :math:`z_t` ids, (...), in [0, V).
        alpha_s, alpha_t: :math:`\alpha_s \ge \alpha_t`, :math:`\alpha_s > 0`; floats or
            tensors broadcastable to z's shape. :math:`\alpha_s = 1` gives the posterior
            of the clean token (the sampler's final noise-removal step).

    Returns:
        (..., V) probabilities of :math:`z_s`, x_probs' dtype.
    """
    V = x_probs.shape[-1]
    if x_probs.shape[:-1] != z.shape:
        raise ValueError(f"x_probs of shape {tuple(x_probs.shape)} does not match z of shape "
                         f"{tuple(z.shape)} plus a vocabulary axis")
    check_ids(z, V, "z")
    dtype = x_probs.dtype if x_probs.dtype.is_floating_point else torch.get_default_dtype()
    x = x_probs.to(dtype)
    a_s = as_alpha(alpha_s, z.shape, dtype, z.device, "alpha_s").unsqueeze(-1)
    a_t = as_alpha(alpha_t, z.shape, dtype, z.device, "alpha_t").unsqueeze(-1)
    if a_s.numel() and (a_s.min() <= 0 or (a_s < a_t).any()):
        raise ValueError("posterior needs alpha_s > 0 and alpha_s >= alpha_t (s before t)")
    z_onehot = F.one_hot(z.long(), V).to(dtype)
    a_ts = a_t / a_s                                                   # alpha_{t|s}
    numerator = (V * a_t * z_onehot * x + (a_ts - a_t) * z_onehot + (a_s - a_t) * x
                 + (a_s - a_t) * (1 - a_s) / (V * a_s))
    x_at_z = (z_onehot * x).sum(-1, keepdim=True)                      # <z_t, x>
    return numerator / (V * a_t * x_at_z + 1 - a_t)


def nelbo_per_token(log_x_theta: Tensor, z: Tensor, x: Tensor, alpha_t: float | Tensor,
                    dalpha_t: float | Tensor) -> Tensor:
    r"""The UDLM continuous-time NELBO integrand :math:`\ell` per token, in nats.

    Its mean over :math:`z_t \sim q(\cdot\mid x)` is the limit of
    :math:`\mathbb{E}\,\mathrm{KL}(q(z_s\mid z_t,x)\,\|\,q(z_s\mid z_t,x_\theta))/dt` with
    :math:`\alpha_s = \alpha_t - \alpha'_t\,dt`; it is 0 at :math:`x_\theta = x` and
    non-negative everywhere. The training loss is its mean over tokens at
    :math:`t \sim U[\epsilon, 1]` (an unbiased estimate of the diffusion part of the bound).

    Args:
        log_x_theta: :math:`\log \mathbf{x}_\theta`, (B, L, V) log-probabilities (e.g.
            ``log_softmax`` of the denoiser's logits; -inf entries are allowed).
        z: :math:`z_t` ids, (B, L).
        x: clean ids, (B, L).
        alpha_t: :math:`\alpha_t \in (0, 1)`, a float or a tensor broadcastable to (B, L),
            e.g. (B, 1).
        dalpha_t: :math:`\alpha'_t \le 0`, the same shapes.

    Returns:
        (B, L), log_x_theta's dtype, differentiable in log_x_theta.
    """
    V = log_x_theta.shape[-1]
    if log_x_theta.shape[:-1] != z.shape or z.shape != x.shape:
        raise ValueError(f"shapes do not match: log_x_theta {tuple(log_x_theta.shape)}, "
                         f"z {tuple(z.shape)}, x {tuple(x.shape)}")
    check_ids(z, V, "z")
    check_ids(x, V, "x")
    dtype, device = log_x_theta.dtype, log_x_theta.device
    a = as_alpha(alpha_t, z.shape, dtype, device, "alpha_t")
    da = as_alpha(dalpha_t, z.shape, dtype, device, "dalpha_t")
    if a.numel() and (a.min() <= 0 or a.max() >= 1):
        raise ValueError("nelbo_per_token needs 0 < alpha_t < 1")
    z, x = z.long(), x.long()
    # x_bar = V alpha x + (1 - alpha) 1: two values, at x and elsewhere.
    xbar_at_x = V * a + 1 - a
    xbar_off = 1 - a
    xbar_z = torch.where(z == x, xbar_at_x, xbar_off)
    # log x_bar_theta = log(V alpha x_theta + 1 - alpha), kept finite where x_theta = 0.
    log_xbar_theta = torch.logaddexp(torch.log(V * a).unsqueeze(-1) + log_x_theta,
                                     torch.log(xbar_off).unsqueeze(-1))
    log_xbar_theta_z = log_xbar_theta.gather(-1, z.unsqueeze(-1)).squeeze(-1)
    log_xbar_theta_x = log_xbar_theta.gather(-1, x.unsqueeze(-1)).squeeze(-1)
    # sum_v x_bar_v log x_bar_v and sum_v x_bar_v log x_bar_theta_v, x_bar being two-valued.
    xlogx = torch.xlogy(xbar_at_x, xbar_at_x) + (V - 1) * torch.xlogy(xbar_off, xbar_off)
    x_log_xtheta = xbar_off * log_xbar_theta.sum(-1) + V * a * log_xbar_theta_x
    bracket = (V * torch.exp(-log_xbar_theta_z) - V / xbar_z
               + (xlogx - x_log_xtheta) / xbar_z
               + V / xbar_z * (log_xbar_theta_z - torch.log(xbar_z)))
    return -da / (V * a) * bracket


