"""Input checks shared by the discrete-diffusion modules: one-line ``ValueError`` messages."""

from __future__ import annotations

import torch
from torch import Tensor


def check_ids(x: Tensor, vocab_size: int, name: str = "x") -> None:
    """Raise a one-line ``ValueError`` unless every id in ``x`` is an integer in [0, V)."""
    if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer token ids, got dtype {x.dtype}")
    if x.numel() == 0:
        return
    low, high = int(x.min()), int(x.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"{name} holds token ids outside [0, {vocab_size}): min {low}, max {high}"
        )


def as_alpha(alpha: float | Tensor, shape: torch.Size, dtype: torch.dtype, device: torch.device,
             name: str = "alpha_t") -> Tensor:
    """``alpha`` as a tensor of ``dtype`` broadcast to ``shape``; one-line error otherwise."""
    a = torch.as_tensor(alpha, dtype=dtype, device=device)
    try:
        if torch.broadcast_shapes(a.shape, shape) != shape:
            raise RuntimeError
    except RuntimeError:
        raise ValueError(
            f"{name} of shape {tuple(a.shape)} does not broadcast to {tuple(shape)}"
        ) from None
    return a.expand(shape)


def check_choice(value: str, choices: tuple[str, ...], name: str) -> None:
    """One-line ``ValueError`` naming the valid choices."""
    if value not in choices:
        raise ValueError(f"unknown {name}={value!r}; expected one of {', '.join(choices)}")
