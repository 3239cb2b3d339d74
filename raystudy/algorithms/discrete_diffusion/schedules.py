r"""Noise schedules :math:`\alpha_t` of a uniform-state discrete diffusion.

The forward process keeps a token with probability :math:`\alpha_t` and otherwise redraws
it uniformly over the V tokens (``uniform.py``). A schedule maps the diffusion time
:math:`t \in [0, 1]` to :math:`\alpha_t`, decreasing from :math:`\alpha_0 = 1` (clean) to
:math:`\alpha_1 \approx 0` (pure noise), and gives its derivative :math:`\alpha'_t =
d\alpha_t/dt \le 0`, which weights the continuous-time NELBO. The denoiser is conditioned
on :math:`\sigma_t = -\log \alpha_t` (Duo's ``_sigma_from_alphat``).

* **LinearAlpha** (Duo's ``LogLinear``, after SEDD; :math:`\epsilon = 10^{-3}` keeps
  :math:`\alpha_1 > 0`): :math:`\alpha_t = 1 - (1 - \epsilon) t`,
  :math:`\alpha'_t = -(1 - \epsilon)`.
* **CosineAlpha** (Duo's ``Cosine``): with :math:`u = \tfrac{\pi}{2}(1 - (1-\epsilon)t)`,
  :math:`\alpha_t = 1 - \cos u = 2\sin^2(u/2)` (the second form keeps precision near
  t = 1, where :math:`\alpha_1 = 1 - \cos(\pi\epsilon/2) \approx 1.2 \cdot 10^{-6}`), and
  the exact derivative :math:`\alpha'_t = -\tfrac{\pi}{2}(1-\epsilon)\sin u` (Duo drops
  the factor :math:`1 - \epsilon`).

Both accept ``t`` as a Python float (returning a float) or a tensor of any shape
(returning a tensor of that shape and dtype).
"""

from __future__ import annotations

import math
from typing import Protocol, overload

import torch
from torch import Tensor


class Schedule(Protocol):
    """What the samplers, losses and the ``Denoiser`` need of a schedule."""

    def alpha(self, t: float | Tensor) -> float | Tensor: ...

    def dalpha(self, t: float | Tensor) -> float | Tensor: ...


def _check_eps(eps: float) -> None:
    if not 0.0 <= eps < 1.0:
        raise ValueError(f"eps={eps} must be in [0, 1)")


class LinearAlpha:
    r"""Linear schedule :math:`\alpha_t = 1 - (1-\epsilon)t` (Duo's ``LogLinear``).

    Args:
        eps: :math:`\epsilon`, the signal left at t = 1 (default 1e-3, as Duo and SEDD).
    """

    def __init__(self, eps: float = 1e-3) -> None:
        _check_eps(eps)
        self.eps = eps

    @overload
    def alpha(self, t: float) -> float: ...
    @overload
    def alpha(self, t: Tensor) -> Tensor: ...

    def alpha(self, t: float | Tensor) -> float | Tensor:
        """:math:`\\alpha_t`."""
        return 1 - (1 - self.eps) * t

    @overload
    def dalpha(self, t: float) -> float: ...
    @overload
    def dalpha(self, t: Tensor) -> Tensor: ...

    def dalpha(self, t: float | Tensor) -> float | Tensor:
        """:math:`\\alpha'_t = -(1-\\epsilon)`, constant."""
        if isinstance(t, Tensor):
            return torch.full_like(t, -(1 - self.eps))
        return -(1 - self.eps)

    def __repr__(self) -> str:
        return f"LinearAlpha(eps={self.eps})"


class CosineAlpha:
    r"""Cosine schedule :math:`\alpha_t = 1 - \cos(\tfrac{\pi}{2}(1 - (1-\epsilon)t))`.

    Args:
        eps: :math:`\epsilon`, the time stretch that keeps :math:`\alpha_1 > 0`
            (default 1e-3).
    """

    def __init__(self, eps: float = 1e-3) -> None:
        _check_eps(eps)
        self.eps = eps

    def _u(self, t: float | Tensor) -> float | Tensor:
        return (math.pi / 2) * (1 - (1 - self.eps) * t)

    @overload
    def alpha(self, t: float) -> float: ...
    @overload
    def alpha(self, t: Tensor) -> Tensor: ...

    def alpha(self, t: float | Tensor) -> float | Tensor:
        """:math:`\\alpha_t = 2\\sin^2(u/2)`, the same as :math:`1 - \\cos u`."""
        u = self._u(t)
        if isinstance(u, Tensor):
            return 2 * torch.sin(u / 2) ** 2
        return 2 * math.sin(u / 2) ** 2

    @overload
    def dalpha(self, t: float) -> float: ...
    @overload
    def dalpha(self, t: Tensor) -> Tensor: ...

    def dalpha(self, t: float | Tensor) -> float | Tensor:
        """:math:`\\alpha'_t = -\\tfrac{\\pi}{2}(1-\\epsilon)\\sin u`."""
        u = self._u(t)
        scale = -(math.pi / 2) * (1 - self.eps)
        if isinstance(u, Tensor):
            return scale * torch.sin(u)
        return scale * math.sin(u)

    def __repr__(self) -> str:
        return f"CosineAlpha(eps={self.eps})"
