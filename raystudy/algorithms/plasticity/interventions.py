r"""Interventions against loss of plasticity, as pieces any training loop can call.

A piece has three hooks, each a no-op unless the piece needs it; a loop calls them as

.. code-block:: python

    intervention.task_start(model, optimizer, task)          # at each task boundary
    intervention.scoring_data(task_inputs)                   # the data the task trains on
    loss = task_loss + intervention.penalty(model, features)  # features of the minibatch
    loss.backward(); optimizer.step()
    intervention.after_step(model, optimizer, inputs)         # inputs: the minibatch

and :class:`Compose` chains pieces (L2-ER is ``Compose([L2(lam), EffectiveRankAscent(...)])``).
``model`` follows :mod:`.models` (``forward_features``, ``unit_pairs``). Symbols:
:math:`\theta` all parameters, :math:`\theta_0` their initial values,
:math:`\Phi_l` the post-activation features of hidden layer :math:`l = 1..L`.

* :class:`L2` (:math:`\lambda`): :math:`\tfrac{\lambda}{2}\|\theta\|^2` added to the loss,
  i.e. coupled weight decay :math:`g \leftarrow g + \lambda\theta` before the optimizer
  (optax ``add_decayed_weights`` in lop-jax).
* :class:`L2Init` (:math:`\lambda`): :math:`\tfrac{\lambda}{2}\|\theta-\theta_0\|^2`
  (Kumar, Marklund & Van Roy 2023, "Maintaining plasticity via regenerative
  regularization").
* :class:`ShrinkPerturb` (:math:`\lambda_s, \sigma`): after every step
  :math:`\theta \leftarrow (1-\lambda_s)\theta + \sigma\epsilon`,
  :math:`\epsilon \sim \mathcal N(0, I)` (Ash & Adams 2020; applied every step as in
  Dohare et al. 2024 and lop-jax's ``snp``).
* :class:`ReDo` (:math:`\tau`, ``every``, ``batch``): every ``every`` steps, the units of
  each hidden layer with ReDo score :math:`\le \tau` on a scoring batch of ``batch``
  inputs drawn afresh from the task's data (``scoring_data``; Sokar et al. score a batch
  of their own, not the training minibatch: on one sample half of the ReLU units are
  silent) get fresh incoming weights and bias, zero outgoing weights, and zero optimizer
  moments for all of those entries (Sokar et al. 2023, "The dormant neuron phenomenon",
  Alg. 1).
* :class:`FullReset`: at each task start, every parameter is re-initialised and the
  optimizer state is cleared (the reference the paper compares with).
* :class:`EffectiveRankAscent` (:math:`\eta_{er}`, ``every``): the authors' ER term
  (lop-jax ``train_permuted_mnist.py``): every ``every`` steps, one plain gradient step
  outside the optimizer, :math:`\theta \leftarrow \theta + \eta_{er}\nabla_\theta
  \tfrac1L\sum_l \operatorname{erank}(\Phi_l)`, with :math:`\Phi_l` computed on the
  concatenation of the last ``every`` minibatches.
* :class:`EffectiveRankPenalty` (:math:`\beta`): :math:`-\beta\,\tfrac1L\sum_l
  \operatorname{erank}(\Phi_l)` of the minibatch's features added to the loss.

LayerNorm is architecture (``models.MLP(layernorm=True)``), not a piece. Randomness
(noise, fresh weights) comes from generators seeded by ``(seed, task, step)``, so a run
resumed at a task boundary draws the same numbers as an uninterrupted one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .ranks import dormant_mask, effective_rank


def derive_seed(*keys: int) -> int:
    """A 63-bit seed mixed from integer keys (numpy's SeedSequence)."""
    return int(np.random.SeedSequence([int(k) for k in keys]).generate_state(2, np.uint64)[0]
               >> np.uint64(1))


def _generator(seed: int, device: torch.device) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def mean_effective_rank(features: Sequence[Tensor]) -> Tensor:
    r""":math:`\tfrac1L\sum_l \operatorname{erank}(\Phi_l)` (differentiable)."""
    if not features:
        raise ValueError("mean_effective_rank needs at least one features matrix")
    return torch.stack([effective_rank(f) for f in features]).mean()


def _zero_optimizer_entries(optimizer: torch.optim.Optimizer | None, param: Tensor,
                            index: tuple) -> None:
    """Zero the per-entry optimizer state (Adam moments, momentum) at ``param[index]``."""
    if optimizer is None or param not in optimizer.state:
        return
    for value in optimizer.state[param].values():
        if isinstance(value, Tensor) and value.shape == param.shape:
            value[index] = 0


class Intervention:
    """Base piece: every hook does nothing."""

    def task_start(self, model: nn.Module, optimizer: torch.optim.Optimizer, task: int) -> None:
        """Called at each task boundary, before the first step on task ``task``."""

    def penalty(self, model: nn.Module, features: Sequence[Tensor]) -> Tensor | float:
        """A term added to the loss; ``features`` are the minibatch's hidden features."""
        return 0.0

    def after_step(self, model: nn.Module, optimizer: torch.optim.Optimizer,
                   inputs: Tensor) -> None:
        """Called after each ``optimizer.step()`` with the minibatch's inputs."""

    def scoring_data(self, inputs: Tensor) -> None:
        """The inputs the current task trains on (for pieces that score on a batch of their
        own); a loop calls it at each task start, or whenever its data change."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (for resume at a task boundary)."""


class Compose(Intervention):
    """Several pieces, each hook applied in order (penalties summed)."""

    def __init__(self, pieces: Sequence[Intervention]) -> None:
        self.pieces = list(pieces)

    def task_start(self, model, optimizer, task):
        for piece in self.pieces:
            piece.task_start(model, optimizer, task)

    def penalty(self, model, features):
        return sum((piece.penalty(model, features) for piece in self.pieces), 0.0)

    def after_step(self, model, optimizer, inputs):
        for piece in self.pieces:
            piece.after_step(model, optimizer, inputs)

    def scoring_data(self, inputs):
        for piece in self.pieces:
            piece.scoring_data(inputs)

    def state_dict(self):
        return {str(i): piece.state_dict() for i, piece in enumerate(self.pieces)}

    def load_state_dict(self, state):
        for i, piece in enumerate(self.pieces):
            piece.load_state_dict(state.get(str(i), {}))


def _nonnegative(what: str, value: float) -> float:
    if not value >= 0:
        raise ValueError(f"{what} {value} must be >= 0")
    return value


class L2(Intervention):
    r""":math:`\tfrac{\lambda}{2}\|\theta\|^2` (coupled weight decay :math:`\lambda`)."""

    def __init__(self, coeff: float) -> None:
        self.coeff = _nonnegative("L2 coefficient", coeff)

    def penalty(self, model, features):
        return 0.5 * self.coeff * sum(p.pow(2).sum() for p in model.parameters())


class L2Init(Intervention):
    r""":math:`\tfrac{\lambda}{2}\|\theta-\theta_0\|^2`, :math:`\theta_0` from the first task."""

    def __init__(self, coeff: float) -> None:
        self.coeff = _nonnegative("L2-Init coefficient", coeff)
        self.initial: list[Tensor] | None = None

    def task_start(self, model, optimizer, task):
        if self.initial is None:
            self.initial = [p.detach().clone() for p in model.parameters()]

    def penalty(self, model, features):
        if self.initial is None:
            raise RuntimeError("L2Init.penalty before task_start: no initial parameters yet")
        return 0.5 * self.coeff * sum((p - p0).pow(2).sum()
                                      for p, p0 in zip(model.parameters(), self.initial,
                                                       strict=True))

    def state_dict(self):
        return {"initial": self.initial}

    def load_state_dict(self, state):
        self.initial = state.get("initial")


class ShrinkPerturb(Intervention):
    r"""After every step :math:`\theta \leftarrow (1-\lambda_s)\theta + \sigma\epsilon`."""

    def __init__(self, shrink: float, sigma: float, seed: int = 0) -> None:
        if not 0 <= shrink < 1 or sigma < 0:
            raise ValueError(f"shrink={shrink} must be in [0, 1) and sigma={sigma} >= 0")
        self.shrink, self.sigma, self.seed = shrink, sigma, seed
        self.generator: torch.Generator | None = None

    def task_start(self, model, optimizer, task):
        device = next(model.parameters()).device
        self.generator = _generator(derive_seed(self.seed, task, 1), device)

    @torch.no_grad()
    def after_step(self, model, optimizer, inputs):
        for p in model.parameters():
            p.mul_(1 - self.shrink)
            if self.sigma:
                p.add_(torch.randn(p.shape, generator=self.generator, device=p.device,
                                   dtype=p.dtype), alpha=self.sigma)


@torch.no_grad()
def redo_reset(model: nn.Module, features: Sequence[Tensor], tau: float,
               optimizer: torch.optim.Optimizer | None = None,
               generator: torch.Generator | None = None) -> list[int]:
    """Re-initialise the tau-dormant units of each hidden layer; returns how many per layer.

    ``features[l]`` are the post-activation features of ``model.unit_pairs()[l]``.
    """
    pairs = model.unit_pairs()
    if len(pairs) != len(features):
        raise ValueError(f"{len(features)} feature matrices for {len(pairs)} hidden layers")
    counts = []
    for pair, h in zip(pairs, features, strict=True):
        index = dormant_mask(h, tau).nonzero().squeeze(1).to(pair.incoming.weight.device)
        counts.append(int(index.numel()))
        if not index.numel():
            continue
        w_in, w_out = pair.incoming.weight, pair.outgoing.weight
        bound = 1 / math.sqrt(w_in.shape[1])  # PyTorch's default Linear init
        fresh = torch.rand((len(index), w_in.shape[1]), generator=generator,
                           device=w_in.device, dtype=w_in.dtype)
        w_in[index] = (2 * fresh - 1) * bound
        _zero_optimizer_entries(optimizer, w_in, (index,))
        if pair.incoming.bias is not None:
            fresh = torch.rand(len(index), generator=generator, device=w_in.device,
                               dtype=w_in.dtype)
            pair.incoming.bias[index] = (2 * fresh - 1) * bound
            _zero_optimizer_entries(optimizer, pair.incoming.bias, (index,))
        w_out[:, index] = 0
        _zero_optimizer_entries(optimizer, w_out, (slice(None), index))
        if pair.norm is not None:
            pair.norm.weight[index], pair.norm.bias[index] = 1.0, 0.0
            _zero_optimizer_entries(optimizer, pair.norm.weight, (index,))
            _zero_optimizer_entries(optimizer, pair.norm.bias, (index,))
    return counts


class ReDo(Intervention):
    """Every ``every`` steps, re-initialise the tau-dormant units scored on ``batch`` inputs
    drawn from the task's data (the minibatch only when no data were given)."""

    def __init__(self, tau: float, every: int = 100, seed: int = 0, batch: int = 256) -> None:
        if tau < 0 or every < 1 or batch < 1:
            raise ValueError(f"ReDo needs tau={tau} >= 0, every={every} >= 1 and "
                             f"batch={batch} >= 1")
        self.tau, self.every, self.seed, self.batch = tau, every, seed, batch
        self.steps, self.task, self.reset_units = 0, 0, 0
        self.data: Tensor | None = None

    def task_start(self, model, optimizer, task):
        self.steps, self.task = 0, task

    def scoring_data(self, inputs):
        self.data = inputs

    def scoring_batch(self, inputs: Tensor) -> Tensor:
        """``batch`` rows of the task's data without replacement, seeded by (seed, task,
        step) so a resumed run draws the same ones; ``inputs`` if no data were given."""
        if self.data is None:
            return inputs
        generator = torch.Generator().manual_seed(derive_seed(self.seed, self.task, 4,
                                                              self.steps))
        rows = torch.randperm(len(self.data), generator=generator)[:self.batch]
        return self.data[rows.to(self.data.device)]

    def after_step(self, model, optimizer, inputs):
        self.steps += 1
        if self.steps % self.every:
            return
        with torch.no_grad():
            _, features = model.forward_features(self.scoring_batch(inputs))
        device = next(model.parameters()).device
        generator = _generator(derive_seed(self.seed, self.task, 2, self.steps), device)
        self.reset_units += sum(redo_reset(model, features, self.tau, optimizer, generator))


def reset_parameters(model: nn.Module, seed: int) -> None:
    """Re-initialise every module (the model too) that has ``reset_parameters``, from ``seed``.

    Each ``reset_parameters`` must reset only the module's own parameters (torch's layers
    do; :class:`~.ppo.ActorCritic` resets its log-std).
    """
    device = next(model.parameters()).device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        for module in model.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()


class FullReset(Intervention):
    """At each task after the first: fresh parameters and an empty optimizer state."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def task_start(self, model, optimizer, task):
        if task == 0:
            return
        reset_parameters(model, derive_seed(self.seed, task, 3))
        optimizer.state.clear()


class EffectiveRankAscent(Intervention):
    r"""Every ``every`` steps :math:`\theta \mathrel{+}= \eta_{er}\nabla \overline{\mathrm{erank}}`
    on the last ``every`` minibatches."""

    def __init__(self, lr: float, every: int = 100) -> None:
        if lr < 0 or every < 1:
            raise ValueError(f"ER ascent needs lr={lr} >= 0 and every={every} >= 1")
        self.lr, self.every = lr, every
        self.buffer: list[Tensor] = []

    def task_start(self, model, optimizer, task):
        self.buffer = []

    def after_step(self, model, optimizer, inputs):
        self.buffer.append(inputs.detach())
        if len(self.buffer) < self.every:
            return
        batch, self.buffer = torch.cat(self.buffer), []
        params = [p for p in model.parameters() if p.requires_grad]
        _, features = model.forward_features(batch)
        grads = torch.autograd.grad(mean_effective_rank(features), params, allow_unused=True)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                if g is not None:
                    p.add_(g, alpha=self.lr)


class EffectiveRankPenalty(Intervention):
    r""":math:`-\beta\,\overline{\operatorname{erank}}` of the minibatch's features."""

    def __init__(self, coeff: float) -> None:
        self.coeff = _nonnegative("ER penalty coefficient", coeff)

    def penalty(self, model, features):
        return -self.coeff * mean_effective_rank(features)
