r"""Momo's truncated-model step size (Schaipp, Ohana, Eickenberg, Defazio, Gower 2023).

"MoMo: Momentum Models for Adaptive Learning Rates" (arXiv 2305.07583; code
fabian-sp/MoMo). Momo keeps a momentum model of the loss, linear around the
averaged iterates, truncated below at a lower bound :math:`f^*`, and takes the
largest step along a direction :math:`d_k` that the model allows:

.. math::
    t_k = \min\Big(\frac{\alpha}{\rho_k},\
          \frac{\big(h_k - \rho_k f^*\big)_+}{\langle m_k, d_k\rangle}\Big),
    \qquad h_k = \bar f_k + \langle m_k, x_k\rangle - \gamma_k ,

with :math:`\alpha` the learning rate (cap), :math:`\bar f_k` the averaged loss,
:math:`\gamma_k` the averaged :math:`\langle g_j, x_j\rangle`, :math:`m_k` the
averaged gradient and :math:`\rho_k = 1-\beta^k` under bias correction (else 1).
For plain Momo :math:`d_k = m_k`; for Momo-Adam :math:`d_k = m_k / D_k`; for
the non-Euclidean variants of Crawshaw et al. 2025 (arXiv 2510.09827) the
denominator is the squared dual norm of :math:`m_k`.

Online :math:`f^*` (Schaipp et al., Alg. "Momo*"): with :math:`c = 1+\alpha\lambda`,
if the numerator cap :math:`c\bar f_k + \langle m_k,x_k\rangle - c\gamma_k` falls below
:math:`c\rho_k f^*`, reset :math:`f^* \leftarrow \text{cap}/(2c\rho_k)`; after each
step :math:`f^* \leftarrow \max(f^*_0, (h_k - t_k\langle m_k,d_k\rangle/2)/\rho_k)`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def resolve_loss(
    closure: Callable[[], Tensor | float] | None, loss: Tensor | float | None, owner: str
) -> tuple[Tensor | float, float]:
    """Evaluate ``closure`` (with grad enabled) or take ``loss``; return (loss, float(loss))."""
    if closure is not None and loss is not None:
        raise ValueError(f"{owner}.step takes a closure or loss=..., not both")
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    if loss is None:
        raise ValueError(f"{owner} needs the loss value: call step(closure) or step(loss=loss)")
    return loss, float(loss.detach() if isinstance(loss, Tensor) else loss)


def inner(a: Tensor, b: Tensor) -> Tensor:
    """``<a, b>`` as a 0-d tensor in at least float32 (no host sync)."""
    if a.dtype == b.dtype and a.dtype in (torch.float32, torch.float64):
        return torch.dot(a.reshape(-1), b.reshape(-1))            # the common case, 3 ops
    dtype = torch.promote_types(torch.promote_types(a.dtype, b.dtype), torch.float32)
    return torch.dot(a.reshape(-1).to(dtype), b.reshape(-1).to(dtype))


def inner_sum(xs: list[Tensor], ys: list[Tensor]) -> Tensor | float:
    """``sum_i <x_i, y_i>`` as a 0-d tensor (0.0 for empty lists): one stack and one sum
    instead of a chain of additions."""
    if not xs:
        return 0.0
    return torch.stack([inner(x, y) for x, y in zip(xs, ys, strict=True)]).sum()


def truncated_step_size(
    cap: float, numerator: float, denominator: float, positive_part: bool = True
) -> float:
    """``min(cap, (numerator)_+ / denominator)``; 0 when ``denominator <= 0``.

    With ``positive_part=False`` the numerator is not clamped, so the step can be
    negative (what the code of Crawshaw et al. does).
    """
    if not denominator > 0.0:
        return 0.0
    if positive_part:
        numerator = max(numerator, 0.0)
    return min(cap, numerator / denominator)


def reset_f_star(f_star: float, f_star0: float, cap: float, c: float, rho: float) -> float:
    """Online estimate, before the step: lower ``f*`` if the model's cap is below ``c*rho*f*``."""
    if cap < c * rho * f_star:
        return max(cap / (2.0 * c * rho), f_star0)
    return f_star


def next_f_star(h: float, t: float, norm_sq: float, rho: float, f_star0: float) -> float:
    """Online estimate, after the step: ``max(f*_0, (h - t * norm_sq / 2) / rho)``."""
    return max((h - 0.5 * t * norm_sq) / rho, f_star0)
