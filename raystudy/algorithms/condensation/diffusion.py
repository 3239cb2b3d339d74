r"""A small class-conditional diffusion model: DDPM with DiT's linear schedule.

Ho et al. (2020) DDPM, as DiT (Peebles & Xie 2023, ``diffusion/gaussian_diffusion.py``)
configures it and GADC trains it (research note §4): T = 1000 steps, the linear schedule

.. math::  \beta_t = \text{linspace}(10^{-4} s, 0.02 s, T), \quad s = 1000 / T,

:math:`\bar\alpha_t = \prod_{s \le t} (1 - \beta_s)`, forward process
:math:`x_t = \sqrt{\bar\alpha_t} x_0 + \sqrt{1 - \bar\alpha_t}\, \epsilon`, epsilon
prediction with the simple loss :math:`\|\epsilon - \epsilon_\theta(x_t, t, y)\|^2`
(DiT's learn_sigma is dropped: raystudy's reading for an MLP on low-dimensional data).
Classifier-free guidance (Ho & Salimans 2022) with DiT's form
:math:`\hat\epsilon = \epsilon(x, \varnothing) + w (\epsilon(x, y) - \epsilon(x, \varnothing))`,
the null label being index ``classes`` and a label dropped with probability 0.1 in
training. Sampling on a respaced grid of ``steps`` timesteps (improved-diffusion's
respacing: :math:`\beta'_i = 1 - \bar\alpha_{t_i} / \bar\alpha_{t_{i-1}}`) by the DDPM
ancestral sampler (posterior variance :math:`\tilde\beta`) or DDIM (Song et al. 2021,
eta = 0 deterministic).

* ``Denoiser(dim, classes, hidden=128, depth=3)``: MLP on [x, sinusoidal(t), embed(y)];
* ``GaussianDiffusion(T=1000)``: ``q_sample``, ``loss``, ``sample(eps_fn, y, ...)``.

``sample`` takes any ``eps_fn(x (B, d), t (B,) long, y (B,) long) -> (B, d)``, so the tests
drive it with the analytic epsilon of a Gaussian target.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
import torch
from torch import nn

EpsFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def linear_betas(T: int = 1000) -> np.ndarray:
    """DiT's ``get_named_beta_schedule("linear", T)``: ``(T,)`` float64."""
    scale = 1000 / T
    return np.linspace(scale * 1e-4, scale * 0.02, T, dtype=np.float64)


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10_000.0) -> torch.Tensor:
    """DiT's sinusoidal embedding of integer timesteps ``(B,)`` -> ``(B, dim)``."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class Denoiser(nn.Module):
    """epsilon_theta(x, t, y): an MLP on [x, sinusoidal(t), embed(y)] (null label = classes).

    x ``(B, dim)``, t ``(B,)`` long in [0, T), y ``(B,)`` long in [0, classes].
    """

    def __init__(self, dim: int, classes: int, hidden: int = 128, depth: int = 3,
                 t_dim: int = 32, y_dim: int = 16) -> None:
        super().__init__()
        self.dim, self.classes, self.t_dim = dim, classes, t_dim
        self.label = nn.Embedding(classes + 1, y_dim)
        layers: list[nn.Module] = []
        width = dim + t_dim + y_dim
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.SiLU()]
            width = hidden
        layers.append(nn.Linear(width, dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, timestep_embedding(t, self.t_dim), self.label(y)], dim=-1)
        out: torch.Tensor = self.net(h)
        return out


class GaussianDiffusion:
    """DDPM with ``T`` steps of DiT's linear schedule, epsilon prediction."""

    def __init__(self, T: int = 1000) -> None:
        self.T = T
        self.betas = linear_betas(T)
        self.alphas_cumprod = np.cumprod(1.0 - self.betas)
        self._abar = torch.tensor(self.alphas_cumprod, dtype=torch.float32)

    def q_sample(self, x0: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """x_t = sqrt(abar_t) x0 + sqrt(1 - abar_t) eps; x0, noise ``(B, d)``, t ``(B,)``."""
        abar = self._abar[t][:, None]
        return abar.sqrt() * x0 + (1 - abar).sqrt() * noise

    def loss(self, model: nn.Module, x0: torch.Tensor, y: torch.Tensor,
             generator: torch.Generator, label_dropout: float = 0.1) -> torch.Tensor:
        """The simple loss mean ||eps - eps_theta(x_t, t, y')||^2, t ~ U{0..T-1}, y' = null
        (``model.classes``) with probability ``label_dropout``."""
        B = len(x0)
        t = torch.randint(0, self.T, (B,), generator=generator)
        noise = torch.randn(x0.shape, generator=generator)
        drop = torch.rand(B, generator=generator) < label_dropout
        y = torch.where(drop, torch.full_like(y, model.classes), y)  # type: ignore[arg-type]
        return ((model(self.q_sample(x0, t, noise), t, y) - noise) ** 2).mean()

    def respaced(self, steps: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``steps`` timesteps kept (evenly spaced, improved-diffusion's
        ``space_timesteps``) and their abar ``(steps,)`` each."""
        frac = (self.T - 1) / max(steps - 1, 1)
        kept = np.array(sorted({round(i * frac) for i in range(steps)}), dtype=np.int64)
        return kept, self.alphas_cumprod[kept]

    @torch.no_grad()
    def sample(self, eps_fn: EpsFn, y: torch.Tensor, dim: int, generator: torch.Generator,
               steps: int = 100, method: Literal["ddpm", "ddim"] = "ddpm",
               guidance: float = 1.0, null_label: int | None = None,
               eta: float = 0.0) -> torch.Tensor:
        """Samples ``(B, dim)`` for labels ``y`` ``(B,)`` from x_T ~ N(0, I) on ``steps``
        respaced timesteps. ``guidance`` w != 1 applies CFG with ``null_label``."""
        kept, abar = self.respaced(steps)
        abar_prev = np.concatenate([[1.0], abar[:-1]])
        B = len(y)
        x = torch.randn((B, dim), generator=generator)

        def eps_hat(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            if guidance == 1.0:
                return eps_fn(x, t, y)
            assert null_label is not None, "guidance != 1 needs null_label"
            e = eps_fn(torch.cat([x, x]), torch.cat([t, t]),
                       torch.cat([y, torch.full_like(y, null_label)]))
            e_c, e_u = e[:B], e[B:]
            return e_u + guidance * (e_c - e_u)

        for i in reversed(range(len(kept))):
            t = torch.full((B,), int(kept[i]), dtype=torch.long)
            a, a_prev = float(abar[i]), float(abar_prev[i])
            eps = eps_hat(x, t)
            x0 = (x - math.sqrt(1 - a) * eps) / math.sqrt(a)
            if method == "ddpm":  # ancestral step of the respaced chain (DDPM Eq. 6-7)
                beta = 1 - a / a_prev
                mean = (math.sqrt(a_prev) * beta / (1 - a) * x0
                        + math.sqrt(1 - beta) * (1 - a_prev) / (1 - a) * x)
                var = beta * (1 - a_prev) / (1 - a)
            else:  # DDIM (Song et al. 2021, Eq. 12)
                var = eta ** 2 * (1 - a_prev) / (1 - a) * (1 - a / a_prev)
                mean = math.sqrt(a_prev) * x0 + math.sqrt(max(1 - a_prev - var, 0.0)) * eps
            noise = torch.randn((B, dim), generator=generator) if i > 0 else 0.0
            x = mean + math.sqrt(var) * noise
        return x


def model_eps_fn(model: nn.Module) -> EpsFn:
    """The trained denoiser as an ``eps_fn`` (eval mode, no grad)."""
    def fn(x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = model(x, t, y)
        return out
    return fn


def gaussian_eps_fn(diffusion: GaussianDiffusion, means: torch.Tensor, cov: torch.Tensor
                    ) -> EpsFn:
    """The optimal epsilon of a Gaussian target N(means[y], cov): with
    x_t ~ N(sqrt(abar) m, abar S + (1 - abar) I), eps* = sqrt(1 - abar) Sigma_t^-1
    (x - sqrt(abar) m). means ``(classes + 1, d)`` (the last row the null label's), cov
    ``(d, d)``; a test reference."""
    abar_all = torch.tensor(diffusion.alphas_cumprod, dtype=torch.float64)
    eye = torch.eye(cov.shape[0], dtype=torch.float64)

    def fn(x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        abar = abar_all[t][:, None, None]
        Sigma = abar * cov.double() + (1 - abar) * eye
        r = x.double() - abar[:, :, 0].sqrt() * means.double()[y]
        sol = torch.linalg.solve(Sigma, r.unsqueeze(-1)).squeeze(-1)
        return ((1 - abar[:, :, 0]).sqrt() * sol).to(x.dtype)
    return fn
