r"""Momo and Momo-Adam: momentum with a truncated-model step size.

Schaipp, Ohana, Eickenberg, Defazio, Gower 2023, "MoMo: Momentum Models for
Adaptive Learning Rates" (arXiv 2305.07583; code fabian-sp/MoMo). At step
:math:`k` with loss :math:`f_k`, gradient :math:`g_k` and iterate :math:`x_k`:

.. math::
    d_k &= \beta d_{k-1} + (1-\beta) g_k, \qquad
    \bar f_k = \beta \bar f_{k-1} + (1-\beta) f_k, \qquad
    \gamma_k = \beta \gamma_{k-1} + (1-\beta)\langle g_k, x_k\rangle, \\
    h_k &= \bar f_k + \langle d_k, x_k\rangle - \gamma_k, \qquad
    \tau_k = \min\Big(\frac{\alpha}{\rho_k},\
        \frac{\big(c(\bar f_k - \rho_k f^*) + \langle d_k, x_k\rangle - c\gamma_k\big)_+}
             {\langle d_k, D_k^{-1} d_k\rangle}\Big), \\
    x_{k+1} &= \big(x_k - \tau_k D_k^{-1} d_k\big) / c, \qquad c = 1 + \alpha\lambda .

Symbols: :math:`\alpha` ``lr``; :math:`\lambda` ``weight_decay`` (a proximal step,
hence the division by :math:`c`; :math:`c = 1` without weight decay, which gives
:math:`(h_k - \rho_k f^*)_+`); :math:`f^*` ``f_star``, a lower bound of the loss
(0 by default; ``online_f_star=True`` estimates it, see :mod:`.truncation`);
:math:`\rho_k = 1-\beta^k` with bias correction (averages start at 0), else
:math:`\rho_k = 1` (averages start at the first values).

* :class:`Momo`: :math:`D_k = I`; defaults ``lr=1``, ``beta=0.9``,
  ``bias_correction=False`` (the reference code's default).
* :class:`MomoAdam`: :math:`\beta = \beta_1`, Adam's second moment
  :math:`v_k = \beta_2 v_{k-1} + (1-\beta_2) g_k^2` and
  :math:`D_k = \epsilon + \sqrt{v_k / (1-\beta_2^k)}`, always bias-corrected;
  defaults ``lr=1e-2``, ``betas=(0.9, 0.999)``, ``eps=1e-8``.

Both need the loss: ``step(closure)`` or ``step(loss=loss)`` after ``backward()``.
Global scalars (:math:`k, \bar f, \gamma, f^*`, last :math:`\tau`) live in
``self.state["momo"]`` and survive ``state_dict()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor
from torch.optim import Optimizer

from .checks import check_beta, check_lr, check_nonnegative
from .truncation import inner, next_f_star, reset_f_star, resolve_loss, truncated_step_size


class _MomoBase(Optimizer):
    """Shared Momo step; subclasses define the preconditioner :math:`D_k`."""

    uses_loss = True

    def _beta(self) -> float:
        raise NotImplementedError

    def _preconditioner(self, group: dict, p: Tensor, g: Tensor, k: int) -> Tensor | None:
        """Update second moments and return :math:`D_k` (``None`` for the identity)."""
        raise NotImplementedError

    def _init_momo(
        self, params: Iterable, lr: float, weight_decay: float, f_star: float, defaults: dict
    ) -> None:
        check_lr(lr)
        check_nonnegative(weight_decay, "weight_decay")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, **defaults))
        self.state["momo"] = {"k": 0, "f_star": float(f_star), "f_star0": float(f_star)}

    @torch.no_grad()
    def step(
        self, closure: Callable[[], Tensor] | None = None, loss: Tensor | float | None = None
    ) -> Tensor | float:
        """One Momo step; needs ``closure`` or ``loss``. Returns the loss."""
        loss, f = resolve_loss(closure, loss, type(self).__name__)
        beta, glob = self._beta(), self.state["momo"]
        glob["k"] += 1
        k, first = glob["k"], glob["k"] == 1
        bias_correction = self.defaults["bias_correction"]
        x_dot_g: Tensor | float = 0.0
        x_dot_d: Tensor | float = 0.0
        d_norm_sq: Tensor | float = 0.0
        directions: list[tuple[Tensor, Tensor, Tensor | None]] = []
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g, state = p.grad, self.state[p]
                x_dot_g = x_dot_g + inner(p, g)
                if "d" not in state:
                    state["d"] = torch.zeros_like(p) if bias_correction else g.clone()
                d = state["d"].lerp_(g, 1 - beta)
                D = self._preconditioner(group, p, g, k)
                x_dot_d = x_dot_d + inner(p, d)
                d_norm_sq = d_norm_sq + (inner(d, d) if D is None else inner(d, d / D))
                directions.append((p, d, D))
        x_dot_g, x_dot_d, d_norm_sq = float(x_dot_g), float(x_dot_d), float(d_norm_sq)
        if first and not bias_correction:
            glob["f_bar"], glob["gamma"] = f, x_dot_g
        f_bar = beta * glob.get("f_bar", 0.0) + (1 - beta) * f
        gamma = beta * glob.get("gamma", 0.0) + (1 - beta) * x_dot_g
        glob["f_bar"], glob["gamma"] = f_bar, gamma
        rho = 1 - beta**k if bias_correction else 1.0
        h = f_bar + x_dot_d - gamma
        for group in self.param_groups:
            lr, lam = group["lr"], group["weight_decay"]
            c = 1 + lr * lam
            if group["online_f_star"]:
                cap = c * f_bar + x_dot_d - c * gamma
                glob["f_star"] = reset_f_star(glob["f_star"], glob["f_star0"], cap, c, rho)
            numerator = c * (f_bar - rho * glob["f_star"]) + x_dot_d - c * gamma
            tau = truncated_step_size(lr / rho, numerator, d_norm_sq)
            if group["online_f_star"]:
                glob["f_star"] = next_f_star(h, tau, d_norm_sq, rho, glob["f_star0"])
            glob["tau"] = tau
            members = {id(p) for p in group["params"]}
            for p, d, D in directions:
                if id(p) not in members:
                    continue
                if D is None:
                    p.add_(d, alpha=-tau)
                else:
                    p.addcdiv_(d, D, value=-tau)
                if lam != 0.0:
                    p.div_(c)
        return loss


class Momo(_MomoBase):
    """Momo (SGD with momentum and the truncated-model step size).

    Args:
        params: parameters or param groups.
        lr: cap :math:`\\alpha` of the step size (default 1.0).
        weight_decay: proximal weight decay :math:`\\lambda` (default 0).
        beta: momentum :math:`\\beta` (default 0.9).
        f_star: lower bound :math:`f^*` of the loss (default 0).
        bias_correction: zero-initialised averages with :math:`\\rho_k = 1-\\beta^k`
            (default False).
        online_f_star: estimate :math:`f^*` online (default False).
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1.0,
        weight_decay: float = 0.0,
        beta: float = 0.9,
        f_star: float = 0.0,
        bias_correction: bool = False,
        online_f_star: bool = False,
    ) -> None:
        defaults = dict(
            beta=check_beta(beta, "beta"),
            bias_correction=bias_correction,
            online_f_star=online_f_star,
        )
        self._init_momo(params, lr, weight_decay, f_star, defaults)

    def _beta(self) -> float:
        return self.defaults["beta"]

    def _preconditioner(self, group: dict, p: Tensor, g: Tensor, k: int) -> Tensor | None:
        return None


class MomoAdam(_MomoBase):
    """Momo-Adam (Adam's preconditioner with the truncated-model step size).

    Args:
        params: parameters or param groups.
        lr: cap :math:`\\alpha` of the step size (default 1e-2).
        betas: :math:`(\\beta_1, \\beta_2)` (default (0.9, 0.999)).
        eps: :math:`\\epsilon` in :math:`D_k` (default 1e-8).
        weight_decay: proximal weight decay :math:`\\lambda` (default 0).
        f_star: lower bound :math:`f^*` of the loss (default 0).
        online_f_star: estimate :math:`f^*` online (default False).
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        f_star: float = 0.0,
        online_f_star: bool = False,
    ) -> None:
        betas = (check_beta(betas[0], "betas[0]"), check_beta(betas[1], "betas[1]"))
        defaults = dict(
            betas=betas,
            eps=check_nonnegative(eps, "eps"),
            bias_correction=True,
            online_f_star=online_f_star,
        )
        self._init_momo(params, lr, weight_decay, f_star, defaults)

    def _beta(self) -> float:
        return self.defaults["betas"][0]

    def _preconditioner(self, group: dict, p: Tensor, g: Tensor, k: int) -> Tensor | None:
        state, beta2 = self.state[p], group["betas"][1]
        if "v" not in state:
            state["v"] = torch.zeros_like(p)
        v = state["v"].mul_(beta2).addcmul_(g, g, value=1 - beta2)
        return (v / (1 - beta2**k)).sqrt_().add_(group["eps"])
