"""Build an optimizer for a whole model by name, and step it uniformly.

``make_optimizer(name, model, lr, weight_decay=0.0, **options)`` applies the
matrix/vector split of :mod:`.split` to the hybrid methods (option ``is_matrix``
overrides the rule) and passes ``options`` to the constructor:

========================  ==============================================================
name                      optimizer
========================  ==============================================================
``adamw``                 ``torch.optim.AdamW`` on all parameters
``sgd``                   ``torch.optim.SGD``, ``momentum=0.9`` unless given
``muon_adam``             :class:`.MuonAdam` (Muon on matrices, Adam on the rest)
``muonmax``               :class:`.MuonMax`
``momo``                  :class:`.Momo` on all parameters
``momo_adam``             :class:`.MomoAdam` on all parameters
``muonmax_momo``          :class:`.MuonMaxMomo`
``muon_adam_momo``        :class:`.MuonAdamMomo`
========================  ==============================================================

``optimizer_step(opt, loss)`` calls ``opt.step(loss=loss)`` when ``opt.uses_loss``
(the Momo family) and ``opt.step()`` otherwise, so one training loop serves all.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .checks import check_lr, check_nonnegative
from .momo import Momo, MomoAdam
from .muon_adam import MuonAdam, MuonAdamMomo
from .muonmax import MuonMax, MuonMaxMomo
from .split import matrix_param_groups

OPTIMIZER_NAMES = (
    "adamw",
    "sgd",
    "muon_adam",
    "muonmax",
    "momo",
    "momo_adam",
    "muonmax_momo",
    "muon_adam_momo",
)

_HYBRID = {
    "muon_adam": MuonAdam,
    "muonmax": MuonMax,
    "muonmax_momo": MuonMaxMomo,
    "muon_adam_momo": MuonAdamMomo,
}


def make_optimizer(
    name: str, model: nn.Module, lr: float, weight_decay: float = 0.0, **options
) -> torch.optim.Optimizer:
    """The optimizer ``name`` (one of :data:`OPTIMIZER_NAMES`) over ``model``'s parameters."""
    if name not in OPTIMIZER_NAMES:
        raise ValueError(f"unknown optimizer {name!r}; valid: {', '.join(OPTIMIZER_NAMES)}")
    lr = check_lr(lr)
    weight_decay = check_nonnegative(weight_decay, "weight_decay")
    is_matrix = options.pop("is_matrix", None)
    if is_matrix is not None and name not in _HYBRID:
        raise ValueError(f"option is_matrix applies to {', '.join(_HYBRID)} only, not {name!r}")
    params = [p for p in model.parameters() if p.requires_grad]
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, **options)
    if name == "sgd":
        options.setdefault("momentum", 0.9)
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay, **options)
    if name == "momo":
        return Momo(params, lr=lr, weight_decay=weight_decay, **options)
    if name == "momo_adam":
        return MomoAdam(params, lr=lr, weight_decay=weight_decay, **options)
    groups = matrix_param_groups(model, is_matrix)
    return _HYBRID[name](groups, lr=lr, weight_decay=weight_decay, **options)


def optimizer_step(opt: torch.optim.Optimizer, loss: Tensor | float) -> None:
    """``opt.step(loss=loss)`` for optimizers that use the loss, else ``opt.step()``."""
    if getattr(opt, "uses_loss", False):
        opt.step(loss=loss)
    else:
        opt.step()
