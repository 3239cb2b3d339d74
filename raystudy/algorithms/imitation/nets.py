"""Networks and plumbing shared by the imitation learners.

* :func:`mlp`: ReLU MLP, orthogonal init with gain sqrt(2) and zero biases (the public
  DualCOIL code's ``default_init``);
* :class:`GaussianPolicy`: ``pi(a|s) = N(tanh(mu(s)), diag(exp(2 log_sigma)))`` with a
  state-independent ``log_sigma`` (init 0, clipped to [-5, 2]) -- the public DualCOIL
  actor; every learner here uses it, so the methods differ only in their losses.
  Actions live in [-1, 1] (the study rescales the environment's box);
* :class:`DoubleQ`, :func:`state_value`, :class:`Discriminator` (sigmoid output clipped
  to ``[low, high]``);
* :class:`Learner`: the interface every method implements (``update(batch) -> losses``,
  ``act``, ``state_dict``/``load_state_dict``) and the optimiser step with an optional
  gradient hook (a data-parallel caller averages gradients there);
* :class:`EnvPolicy`: a trained actor as an ``obs -> action`` callable in the
  environment's units, rebuilt from plain arrays (picklable, for parallel evaluation).

A batch is ``{"good": T, "bad": T, "unlabeled": T, "initial": s_0}`` where each ``T``
maps ``observations``, ``actions``, ``rewards``, ``next_observations``, ``terminals``
to tensors (``B x obs_dim``, ``B x act_dim``, ``B``, ``B x obs_dim``, ``B``) and ``s_0``
is ``B x obs_dim`` initial observations of the unlabeled episodes. A learner reads the
sources it lists in ``sources`` and ignores the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

Batch = Mapping[str, Any]
GradHook = Callable[[Iterable[nn.Parameter]], None]
LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


def mlp(in_dim: int, hidden: Sequence[int], out_dim: int) -> nn.Sequential:
    """``in -> hidden... -> out`` with ReLU between layers, orthogonal(sqrt 2) init."""
    layers: list[nn.Module] = []
    sizes = [in_dim, *hidden]
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b), nn.ReLU()]
    layers.append(nn.Linear(sizes[-1], out_dim))
    for layer in layers:
        if isinstance(layer, nn.Linear):
            nn.init.orthogonal_(layer.weight, gain=math.sqrt(2.0))
            nn.init.zeros_(layer.bias)
    return nn.Sequential(*layers)


class GaussianPolicy(nn.Module):
    """Gaussian with mean ``tanh(mu(s))`` and a state-independent log-std."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: Sequence[int] = (256, 256)) -> None:
        super().__init__()
        self.mu = mlp(obs_dim, hidden, act_dim)
        self.log_std = nn.Parameter(torch.zeros(act_dim))

    def distribution(self, obs: torch.Tensor) -> torch.distributions.Normal:
        std = self.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).exp()
        return torch.distributions.Normal(torch.tanh(self.mu(obs)), std)

    def log_prob(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``log pi(a|s)`` summed over action dimensions: shape ``B``."""
        return self.distribution(obs).log_prob(actions).sum(-1)

    def forward(self, obs: torch.Tensor, deterministic: bool = True) -> torch.Tensor:
        if deterministic:
            return torch.tanh(self.mu(obs))
        return self.distribution(obs).sample().clamp(-1.0, 1.0)


class DoubleQ(nn.Module):
    """Two independent critics ``Q_1(s, a), Q_2(s, a)``."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: Sequence[int] = (256, 256)) -> None:
        super().__init__()
        self.q1 = mlp(obs_dim + act_dim, hidden, 1)
        self.q2 = mlp(obs_dim + act_dim, hidden, 1)

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x = torch.cat([obs, actions], -1)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)


def state_value(obs_dim: int, hidden: Sequence[int] = (256, 256)) -> nn.Module:
    """``V(s)`` (or a DICE ``nu(s)``): an MLP with one output, squeezed to shape ``B``."""
    return nn.Sequential(mlp(obs_dim, hidden, 1), nn.Flatten(0))


class Discriminator(nn.Module):
    """``D(x) = clip(sigmoid(f(x)), low, high)`` for inputs ``x`` of ``in_dim``."""

    def __init__(self, in_dim: int, hidden: Sequence[int] = (256, 256), low: float = 0.05,
                 high: float = 0.95) -> None:
        super().__init__()
        self.f = mlp(in_dim, hidden, 1)
        self.low, self.high = low, high

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return clipped_sigmoid(self.f(x).squeeze(-1), self.low, self.high)


def clipped_sigmoid(logits: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """``clip(sigmoid(logits), low, high)`` (zero gradient where clipped)."""
    return torch.sigmoid(logits).clamp(low, high)


def binary_loss(d_positive: torch.Tensor, d_negative: torch.Tensor) -> torch.Tensor:
    """``-E_pos[log D] - E_neg[log(1 - D)]``: the classifier's cross-entropy."""
    return -torch.log(d_positive).mean() - torch.log1p(-d_negative).mean()


@torch.no_grad()
def polyak(target: nn.Module, source: nn.Module, tau: float) -> None:
    """``theta_target <- tau theta + (1 - tau) theta_target``."""
    for t, s in zip(target.parameters(), source.parameters(), strict=True):
        t.mul_(1.0 - tau).add_(s, alpha=tau)


class Learner:
    """The interface of every method; subclasses set ``sources`` and ``modules``."""

    sources: tuple[str, ...] = ()
    pretrain_steps: int = 0
    """Leading updates that train only the discriminator(s) (0: none)."""

    def __init__(self, grad_hook: GradHook | None = None) -> None:
        self.grad_hook = grad_hook
        self.steps = 0
        self.modules: dict[str, nn.Module] = {}
        self.optimizers: dict[str, torch.optim.Optimizer] = {}
        self.actor: GaussianPolicy

    def step(self, name: str, loss: torch.Tensor) -> float:
        """Backward ``loss`` and step optimiser ``name`` (gradient hook in between)."""
        optimizer = self.optimizers[name]
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.grad_hook is not None:
            self.grad_hook([p for g in optimizer.param_groups for p in g["params"]])
        optimizer.step()
        return float(loss.detach())

    def update(self, batch: Batch) -> dict[str, float]:
        raise NotImplementedError

    @torch.no_grad()
    def act(self, obs: np.ndarray, deterministic: bool = True) -> np.ndarray:
        """Actions in [-1, 1] for a batch (or one) of model-space observations."""
        x = torch.as_tensor(np.asarray(obs), dtype=torch.float32,
                            device=next(self.actor.parameters()).device)
        return self.actor(x, deterministic=deterministic).cpu().numpy()

    def state_dict(self) -> dict[str, Any]:
        return {"steps": self.steps,
                "modules": {k: m.state_dict() for k, m in self.modules.items()},
                "optimizers": {k: o.state_dict() for k, o in self.optimizers.items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.steps = int(state["steps"])
        for key, module in self.modules.items():
            module.load_state_dict(state["modules"][key])
        for key, optimizer in self.optimizers.items():
            optimizer.load_state_dict(state["optimizers"][key])


def adam(module: nn.Module, lr: float, l2: float = 0.0) -> torch.optim.Adam:
    """Adam with ``l2`` added to the gradient (optax ``add_decayed_weights`` + ``adam``)."""
    return torch.optim.Adam(module.parameters(), lr=lr, weight_decay=l2)


def adamw(module: nn.Module, lr: float, decay: float = 1e-4) -> torch.optim.AdamW:
    """AdamW with optax's default decoupled decay 1e-4 (the public code's critic and V)."""
    return torch.optim.AdamW(module.parameters(), lr=lr, weight_decay=decay)


def average_gradients(world_size: int) -> GradHook:
    """A gradient hook that averages gradients over ``world_size`` processes
    (``torch.distributed.all_reduce``; the data-parallel form of any learner here)."""

    def average(parameters: Iterable[nn.Parameter]) -> None:
        grads = [p.grad for p in parameters if p.grad is not None]
        flat = torch.cat([g.flatten() for g in grads])
        torch.distributed.all_reduce(flat)
        flat /= world_size
        offset = 0
        for g in grads:
            g.copy_(flat[offset:offset + g.numel()].view_as(g))
            offset += g.numel()

    return average


class EnvPolicy:
    """A trained actor as ``obs -> action`` in the env's units (deterministic: the mean).

    ``obs_shift``/``obs_scale`` normalise observations as in training,
    ``(obs - shift) / scale``; actions in [-1, 1] map back to ``[low, high]``.
    """

    def __init__(self, actor_state: Mapping[str, torch.Tensor], obs_dim: int, act_dim: int,
                 hidden: Sequence[int], obs_shift: np.ndarray, obs_scale: np.ndarray,
                 low: np.ndarray, high: np.ndarray) -> None:
        self.actor = GaussianPolicy(obs_dim, act_dim, hidden)
        self.actor.load_state_dict(actor_state)
        self.actor.eval()
        self.shift, self.scale = np.asarray(obs_shift), np.asarray(obs_scale)
        self.low, self.high = np.asarray(low), np.asarray(high)

    @torch.no_grad()
    def __call__(self, obs: np.ndarray) -> np.ndarray:
        x = torch.as_tensor((np.asarray(obs) - self.shift) / self.scale, dtype=torch.float32)
        a = self.actor(x[None], deterministic=True)[0].numpy()
        return (self.low + (a + 1.0) * 0.5 * (self.high - self.low)).astype(np.float32)
