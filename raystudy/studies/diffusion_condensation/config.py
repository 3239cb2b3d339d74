"""The study's config: one frozen dataclass (its defaults are the quick profile)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Annotated, Literal

from raystudy import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Range

METHODS = ("random", "kcenter", "herding", "d2c_style", "balanced_ot", "partial_ot", "gadc",
           "gadc_shipped", "full")


@dataclass(frozen=True)
class CondensationConfig:
    method: Literal[METHODS] = "gadc"  # type: ignore[valid-type]
    """Subset method (gadc_shipped: the authors' 20-iteration solver; full: all data)."""
    per_class: PositiveInt = 5
    """Budget K per class (images per class)."""
    kappa: Annotated[float, Range(ge=1.0)] = 1.05
    """Capacity factor of the partial OT (the authors' 1.05; balanced_ot uses 1)."""
    eps_rel: PositiveFloat = 0.05
    """Sinkhorn temperature relative to the class's median squared distance."""
    n_iter: PositiveInt = 20
    """gadc_shipped: Sinkhorn iterations (the authors' 20)."""
    ot_solver: Literal["converged", "exact"] = "converged"
    """OT methods but gadc_shipped: converged entropic OT (eps_rel) | exact: POT's LP."""
    ce_scale: NonNegativeFloat = 0.1
    """CE weight in units of the class's median squared distance (raystudy's reading)."""
    refine_iters: NonNegativeInt = 2
    """Swap rounds at most (the authors' 30)."""
    data: Literal["mixture", "digits", "cifar", "features"] = "mixture"
    """mixture (known densities) | digits (scikit-learn's) | cifar | features (.npy)."""
    data_path: str = ""
    """cifar: the folder of CIFAR-10/100 python pickles; features: of the four .npy files."""
    n_train: PositiveInt = 60
    """Training points per class (the pool selected from)."""
    n_test: PositiveInt = 500
    """Held-out points per class at most (the metrics' reference)."""
    dim: PositiveInt = 8
    """mixture: its dimension; cifar: principal axes kept (others: the data's own)."""
    classes: PositiveInt = 4
    """mixture: its classes (others: the data's own)."""
    steps: PositiveInt = 800
    """Diffusion training steps (the same for every method)."""
    batch_size: PositiveInt = 128
    """Diffusion mini-batch."""
    lr: PositiveFloat = 2e-3
    """Adam learning rate."""
    hidden: PositiveInt = 128
    """Denoiser width."""
    sample_steps: PositiveInt = 50
    """DDIM sampling steps."""
    guidance: Annotated[float, Range(ge=1.0)] = 1.0
    """Classifier-free guidance w (1: none)."""
    eval_every: NonNegativeInt = 400
    """Steps between evaluations (and the last)."""
    checkpoint_every: NonNegativeInt = 1
    """Evaluations between checkpoints (0: only the last)."""
    seed: int = 0
    """Seed of the data, the random subset and the diffusion model."""
    threads: PositiveInt = 1
    """torch threads per trial."""

    def validate(self) -> None:
        if self.per_class > self.n_train:
            raise ValueError(f"per_class ({self.per_class}) must be <= n_train ({self.n_train})")
        if self.data in ("cifar", "features") and not self.data_path:
            raise ValueError(f"data={self.data} needs data_path (the folder to read)")
        if self.ot_solver == "exact":
            require("ot", "ot_solver=exact needs POT")
        if self.data == "digits":
            require("sklearn", "data=digits needs scikit-learn")


def require(module: str, what: str) -> None:
    """A ValueError (one line, exit 2) naming the extra when ``module`` is not installed."""
    if importlib.util.find_spec(module) is None:
        raise ValueError(f"{what}: pip install 'raystudy[condensation]'")
