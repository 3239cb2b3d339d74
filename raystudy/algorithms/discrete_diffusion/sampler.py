r"""Ancestral sampling of a uniform-state diffusion LM with the plug-in posterior.

Duo's default sampler (``s-sahoo/duo`` ``trainer_base.Diffusion.generate_samples``,
``predictor=ancestral``; UDLM, Schiff et al. 2024). Start from
:math:`z_1 \sim U([V]^L)`; on the time grid :math:`t_0 = 1 > t_1 > \dots > t_S =
t_\text{min}` (``linspace(1, t_min, S + 1)``), for each step :math:`t = t_i \to s =
t_{i+1}` draw, independently per token,

.. math:: z_s \sim q\big(z_s \mid z_t, \mathbf{x}_\theta(z_t, t)\big),
          \qquad \mathbf{x}_\theta = \mathrm{softmax}(\text{denoiser}(z_t, t)),

the UDLM posterior (``uniform.posterior``) with the denoiser's prediction plugged in for
the clean token, computed in float64. Then remove the noise left at :math:`t_\text{min}`:

* ``ancestral`` (Duo's default): one more posterior step to :math:`\alpha = 1`, i.e.
  :math:`x \sim q(x \mid z_{t_\text{min}}, \mathbf{x}_\theta)
  \propto \mathbf{x}_\theta \odot (V\alpha\,\mathbf{z} + 1 - \alpha)`;
* ``greedy``: :math:`x = \arg\max_v \mathbf{x}_\theta(z_{t_\text{min}}, t_\text{min})_v`;
* ``none``: return :math:`z_{t_\text{min}}`.

The plug-in chain samples the data distribution exactly only when :math:`\mathbf{x}_\theta`
is the leave-one-out posterior :math:`p(x^\ell \mid z_t^{-\ell})`, not the posterior
mean :math:`\mathbb{E}[x_0 \mid z_t]` (Gourevitch et al., arXiv 2605.22765; checked on
i.i.d. data by the tests).

Shapes: ``denoiser(z, t)`` takes z (n, L) int64 and t (n,) float (the default dtype) and
returns logits (n, L, V); the sample is (n, L) int64.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ._checks import check_choice
from .schedules import LinearAlpha, Schedule
from .uniform import posterior

NOISE_REMOVALS = ("ancestral", "greedy", "none")


def _categorical(probs: Tensor, generator: torch.Generator | None) -> Tensor:
    """One draw per row of ``probs`` (..., V)."""
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).view(probs.shape[:-1])


@torch.no_grad()
def ancestral_sample(denoiser: Callable[[Tensor, Tensor], Tensor], n: int, seq_len: int,
                     vocab_size: int, steps: int, *, schedule: Schedule | None = None,
                     t_min: float = 1e-5, noise_removal: str = "ancestral",
                     generator: torch.Generator | None = None) -> Tensor:
    r"""Draw ``n`` sequences by ``steps`` plug-in ancestral steps from t = 1 to ``t_min``.

    Args:
        denoiser: ``denoiser(z, t) -> logits``; z (n, L) int64, t (n,), logits (n, L, V).
            Put a module in eval mode first; gradients are off here.
        n, seq_len, vocab_size: the output is (n, seq_len) ids in [0, vocab_size).
        steps: S >= 1 posterior steps (denoiser calls; one more for ``ancestral`` and
            ``greedy`` noise removal).
        schedule: the noise schedule (default ``LinearAlpha()``, eps 1e-3).
        t_min: the last time of the grid (default 1e-5, Duo's ``eps``).
        noise_removal: ``"ancestral"`` (default), ``"greedy"`` or ``"none"``.
        generator: torch generator of every draw; its device is the output's device.

    Returns:
        (n, seq_len) int64 samples.
    """
    check_choice(noise_removal, NOISE_REMOVALS, "noise_removal")
    if steps < 1:
        raise ValueError(f"steps={steps} must be >= 1")
    if not 0.0 < t_min < 1.0:
        raise ValueError(f"t_min={t_min} must be in (0, 1)")
    schedule = LinearAlpha() if schedule is None else schedule
    device = generator.device if generator is not None else torch.device("cpu")

    def x_theta(z: Tensor, t: float) -> Tensor:
        logits = denoiser(z, torch.full((n,), t, device=device))
        if logits.shape != (n, seq_len, vocab_size):
            raise ValueError(f"denoiser returned shape {tuple(logits.shape)}, expected "
                             f"{(n, seq_len, vocab_size)}")
        return logits

    z = torch.randint(vocab_size, (n, seq_len), generator=generator, device=device)  # z_1 ~ U
    times = torch.linspace(1.0, t_min, steps + 1, dtype=torch.float64).tolist()
    for t, s in zip(times[:-1], times[1:], strict=True):
        x_probs = torch.softmax(x_theta(z, t).double(), dim=-1)
        z = _categorical(posterior(x_probs, z, schedule.alpha(s), schedule.alpha(t)), generator)
    if noise_removal == "ancestral":                                   # one step to alpha = 1
        x_probs = torch.softmax(x_theta(z, t_min).double(), dim=-1)
        z = _categorical(posterior(x_probs, z, 1.0, schedule.alpha(t_min)), generator)
    elif noise_removal == "greedy":
        z = x_theta(z, t_min).argmax(-1)
    return z
