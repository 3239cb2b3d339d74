"""Argument checks shared by the optimizers of this package.

Each check raises ``ValueError`` with one line naming the argument, its value
and the valid range, so a bad sweep value fails before any training step.
"""

from __future__ import annotations

import math


def check_lr(lr: float, name: str = "lr") -> float:
    """Return ``float(lr)``; raise unless it is finite and > 0."""
    try:
        value = float(lr)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive finite number, got {lr!r}") from None
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be a positive finite number, got {lr!r}")
    return value


def check_nonnegative(value: float, name: str) -> float:
    """Return ``float(value)``; raise unless it is finite and >= 0."""
    if not math.isfinite(float(value)) or float(value) < 0.0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def check_beta(beta: float, name: str) -> float:
    """Return ``float(beta)``; raise unless 0 <= beta < 1."""
    if not 0.0 <= float(beta) < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {beta!r}")
    return float(beta)
