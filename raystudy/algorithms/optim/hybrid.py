r"""Steepest descent over a product of matrix (spectral) and vector (Adam) parameters.

Shared machinery of :class:`.MuonAdam`, :class:`.MuonMax` and their Momo variants
(Crawshaw, Modi, Liu, Gower 2025, "An Exploration of Non-Euclidean Gradient
Descent: Muon and its Many Variants", arXiv 2510.09827; code modichirag/GPT-opt).

Moments, for matrix parameters :math:`W_l` (gradient :math:`G_l`, flattened to
``(out, -1)``) and vector parameters :math:`w_i` (gradient :math:`g_i`):

.. math::
    M_l \leftarrow \mu M_l + (1-\mu) G_l, \quad
    m_i \leftarrow \beta_1 m_i + (1-\beta_1) g_i, \quad
    v_i \leftarrow \beta_2 v_i + (1-\beta_2) g_i^2, \quad
    D_i = \epsilon + \sqrt{v_i}

initialised at the first step with :math:`M = G, m = g, v = g^2` and without bias
correction, as in the paper's code (``muonadam.py``, ``muonmax_momo.py``). Defaults
:math:`\mu = \beta_1 = \beta_2 = 0.95`, :math:`\epsilon = 10^{-8}`.

Dual norms: :math:`\|M_l\|_* = \langle M_l, \operatorname{polar}(M_l)\rangle` (nuclear
norm), :math:`A_0 = \sum_l \|M_l\|_*`, :math:`B^2 = \sum_i \|m_i/\sqrt{D_i}\|_2^2`.

Update with step size :math:`t`, direction scale :math:`c` of the matrix part and
decoupled weight decay :math:`\lambda` (applied with the learning rate
:math:`\alpha`, not with :math:`t`):

.. math::
    W_l \leftarrow (1-\alpha\lambda) W_l - t\, c\, \operatorname{polar}(M_l), \qquad
    w_i \leftarrow (1-\alpha\lambda) w_i - t\, m_i / D_i .

MuonAdam: :math:`c = \rho`; MuonMax: :math:`c = \rho A_0`. Without Momo
:math:`t = \alpha`. With Momo (the paper's "model truncation"),

.. math::
    \bar F_k = \mu \bar F_{k-1} + (1-\mu)\big(f(x_k) - \langle x_k, g_k\rangle\big), \qquad
    t = \min\Big(\alpha,\ \frac{(\bar F_k - F^* + \langle x_k, m_k\rangle)_+}
                            {c A_0 + B^2}\Big),

where :math:`c A_0 + B^2 = \langle m_k, d_k\rangle` is the slope of the model along the
step direction :math:`d_k`: :math:`\rho A_0 + B^2` for MuonAdam-Momo (the sum of
the per-part dual terms) and :math:`\rho A_0^2 + B^2 = \|m_k\|_*^2` for
MuonMax-Momo (the squared hybrid dual norm with :math:`\rho = s^2`).
:math:`\bar F_0` is the first value (no bias correction), :math:`F^*` = ``f_star``.

The positive part :math:`(\cdot)_+`: the paper's code omits it, so when the
model's value drops below :math:`F^*` the step turns negative and moves *up* the
momentum direction. We keep it (``positive_part=True``, Momo's original rule):
the step is then 0 and only weight decay acts. ``positive_part=False``
reproduces the paper's code.

Stale nuclear norm (``stale_nuclear_norm=True``, the paper's default): :math:`A_0`
is summed from the previous step's :math:`\langle M_l, \operatorname{polar}(M_l)\rangle`
(exact at the first step). Either way each layer costs one polar factor per step,
and all layers' factors are computed together, same-shape matrices as one batched
Newton–Schulz chain (:func:`.polar_factors`) in buffers the optimizer keeps on the CPU
(one :class:`.PolarWorkspace` per group), the factor cast back to the parameter's
precision in one of them.

Hyper-parameters :math:`\rho`, :math:`\mu`, :math:`F^*` enter global sums and are
read from the constructor (``self.defaults``); ``lr`` and ``weight_decay`` may
differ between groups (learning-rate schedulers work as usual).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor
from torch.optim import Optimizer

from .checks import check_beta, check_lr, check_nonnegative
from .muon import as_matrix
from .polar import (
    POLAR_METHODS,
    PolarWorkspace,
    keeps_buffers,
    polar_factors,
    polar_factors_and_inners,
)
from .truncation import inner_sum, resolve_loss, truncated_step_size


def as_matrix_groups(params: Iterable) -> list[dict]:
    """Normalise ``params`` to groups that carry ``"matrix"``.

    A group without the key is split by ``p.ndim >= 2`` (this cannot tell an
    embedding or output head from a hidden matrix: prefer
    :func:`.matrix_param_groups`).
    """
    params = list(params)
    if not params:
        raise ValueError("optimizer got an empty parameter list")
    groups = params if isinstance(params[0], dict) else [{"params": params}]
    out = []
    for group in groups:
        group = dict(group)
        ps = [group["params"]] if isinstance(group["params"], Tensor) else list(group["params"])
        if "matrix" in group:
            if group["matrix"] and any(p.ndim < 2 for p in ps):
                raise ValueError("a group with matrix=True holds a parameter with ndim < 2")
            out.append({**group, "params": ps})
            continue
        for flag in (True, False):
            chosen = [p for p in ps if (p.ndim >= 2) == flag]
            if chosen:
                out.append({**group, "params": chosen, "matrix": flag})
    return out


class HybridSteepestDescent(Optimizer):
    """Base class; subclasses set ``hybrid_norm`` (MuonMax) and ``uses_loss`` (Momo).

    Args: ``params`` (groups with ``"matrix": bool``, see :func:`as_matrix_groups`),
    ``lr`` (1e-3), ``weight_decay`` (0.1), ``rho`` (10), ``momentum`` (0.95),
    ``betas`` ((0.95, 0.95)), ``eps`` (1e-8), ``polar_method`` ("polar_express"),
    ``ns_steps`` (5), ``ns_dtype`` (None), ``stale_nuclear_norm`` (True); used by the
    Momo variants only: ``f_star`` (0.0), ``positive_part`` (True).
    """

    hybrid_norm = False
    uses_loss = False

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        rho: float = 10.0,
        momentum: float = 0.95,
        betas: tuple[float, float] = (0.95, 0.95),
        eps: float = 1e-8,
        polar_method: str = "polar_express",
        ns_steps: int = 5,
        ns_dtype: torch.dtype | None = None,
        stale_nuclear_norm: bool = True,
        f_star: float = 0.0,
        positive_part: bool = True,
    ) -> None:
        check_lr(lr)
        check_nonnegative(weight_decay, "weight_decay")
        check_nonnegative(rho, "rho")
        check_beta(momentum, "momentum")
        check_beta(betas[0], "betas[0]")
        check_beta(betas[1], "betas[1]")
        check_nonnegative(eps, "eps")
        if polar_method not in POLAR_METHODS:
            raise ValueError(f"polar_method must be one of {POLAR_METHODS}, got {polar_method!r}")
        defaults = dict(
            lr=lr,
            weight_decay=weight_decay,
            rho=rho,
            momentum=momentum,
            betas=tuple(betas),
            eps=eps,
            polar_method=polar_method,
            ns_steps=ns_steps,
            ns_dtype=ns_dtype,
            stale_nuclear_norm=stale_nuclear_norm,
            f_star=f_star,
            positive_part=positive_part,
        )
        super().__init__(as_matrix_groups(params), defaults)
        self._polar_workspaces: dict[int, PolarWorkspace] = {}

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._polar_workspaces = {}                   # buffers, not state: never saved

    def _polars(self, active: list, inners: bool) -> tuple[dict[Tensor, Tensor],
                                                            dict[Tensor, Tensor]]:
        """``polar(M_p)`` of every matrix parameter in ``active`` (in ``M_p``'s dtype and
        layout, in the group's workspace: valid for this step) and, with ``inners``, each
        ``<M_p, polar(M_p)>``; same-shape matrices of a group as one batched Newton–Schulz
        chain, each inner product one dot with its factor (:func:`.polar_factors_and_inners`);
        buffers kept per group for CPU parameters only."""
        factors: dict[Tensor, Tensor] = {}
        norms: dict[Tensor, Tensor] = {}
        for index, (group, ps, _, states) in enumerate(active):
            if not group["matrix"]:
                continue
            Ms = [as_matrix(state["M"]) for state in states]
            workspace = (self._polar_workspaces.setdefault(index, PolarWorkspace())
                         if keeps_buffers(ps) else None)
            options = dict(method=group["polar_method"], steps=group["ns_steps"],
                           dtype=group["ns_dtype"], workspace=workspace)
            if inners:
                Ps, dots = polar_factors_and_inners(Ms, **options)
                norms.update(zip(ps, dots, strict=True))
            else:
                Ps = polar_factors(Ms, **options)
            for p, state, P in zip(ps, states, Ps, strict=True):
                factors[p] = P.view_as(state["M"])
        return factors, norms

    def _active_groups(self) -> list[tuple[dict, list[Tensor], list[Tensor], list[dict]]]:
        """Each group with its parameters that have a gradient, the gradients and the
        parameters' states (groups without any are left out); built once per step."""
        active = []
        for group in self.param_groups:
            ps = [p for p in group["params"] if p.grad is not None]
            if ps:
                active.append((group, ps, [p.grad for p in ps], [self.state[p] for p in ps]))
        return active

    def _update_moments(self, active: list) -> float:
        """Update M, m, v from ``p.grad`` (fused per group); return ``<x, g>`` when the
        loss is used."""
        xs, gs_all = [], []
        for group, ps, gs, states in active:
            mu, (beta1, beta2) = group["momentum"], group["betas"]
            if self.uses_loss:
                xs += ps
                gs_all += gs
            if group["matrix"]:
                for state, g in zip(states, gs, strict=True):
                    if "M" not in state:
                        state["M"] = g.clone()
                torch._foreach_lerp_([st["M"] for st in states], gs, 1 - mu)
            else:
                for state, g in zip(states, gs, strict=True):
                    if "m" not in state:
                        state["m"], state["v"] = g.clone(), g.square()
                vs = [st["v"] for st in states]
                torch._foreach_lerp_([st["m"] for st in states], gs, 1 - beta1)
                torch._foreach_mul_(vs, beta2)                    # v = b2 v + (1 - b2) g^2,
                torch._foreach_addcmul_(vs, gs, gs, value=1 - beta2)  # no g^2 temporary
        return float(inner_sum(xs, gs_all)) if self.uses_loss else 0.0

    def _nuclear_norm_sum(self, active: list, norms: dict[Tensor, Tensor]) -> float:
        """``A_0 = sum_l <M_l, polar(M_l)>``, from the previous step's values where the
        norm is stale and a layer has one, else from this step's ``norms``."""
        stale = self.defaults["stale_nuclear_norm"]
        terms = [state["nuclear_norm"] if stale and "nuclear_norm" in state else norms[p]
                 for group, ps, _, states in active if group["matrix"]
                 for p, state in zip(ps, states, strict=True)]
        return float(torch.stack(terms).sum()) if terms else 0.0

    def _denominators(self, group: dict, ps: list[Tensor]) -> list[Tensor]:
        """``D_i = eps + sqrt(v_i)`` of a vector group's parameters ``ps`` (fused)."""
        D = torch._foreach_sqrt([self.state[p]["v"] for p in ps])
        torch._foreach_add_(D, group["eps"])
        return D

    def _adam_terms(self, active: list, D: dict[int, list[Tensor]]) -> tuple[float, float]:
        """``(B^2, <x, m>)`` over all parameters (``<x, m>`` only when the loss is used);
        fills ``D[id(group)]`` with the vector groups' denominators for the update."""
        ms, scaled, xs, moms = [], [], [], []
        for group, ps, _, states in active:
            first = [state["M" if group["matrix"] else "m"] for state in states]
            if self.uses_loss:
                xs += ps
                moms += first
            if not group["matrix"]:
                D[id(group)] = self._denominators(group, ps)
                ms += first
                scaled += torch._foreach_div(first, D[id(group)])      # m / D
        return float(inner_sum(ms, scaled)), float(inner_sum(xs, moms))

    def _momo_ratio(self, f: float, x_dot_g: float, x_dot_m: float, slope: float) -> float:
        """Return the truncated step for ``cap = inf``; updates ``F_bar`` in state."""
        mu = self.defaults["momentum"]
        glob = self.state.setdefault("momo", {})
        F_k = f - x_dot_g
        F_bar = glob.get("F_bar", F_k)
        F_bar = mu * F_bar + (1 - mu) * F_k
        glob["F_bar"] = F_bar
        numerator = F_bar - self.defaults["f_star"] + x_dot_m
        glob["numerator"], glob["slope"] = numerator, slope
        return truncated_step_size(
            float("inf"), numerator, slope, positive_part=self.defaults["positive_part"]
        )

    @torch.no_grad()
    def step(
        self, closure: Callable[[], Tensor] | None = None, loss: Tensor | float | None = None
    ) -> Tensor | float | None:
        """One step. Momo variants need the loss: ``step(closure)`` or ``step(loss=...)``."""
        f = None
        if self.uses_loss:
            loss, f = resolve_loss(closure, loss, type(self).__name__)
        elif closure is not None:
            with torch.enable_grad():
                loss = closure()
        active = self._active_groups()
        x_dot_g = self._update_moments(active)
        rho = self.defaults["rho"]
        need_A0 = self.hybrid_norm or self.uses_loss
        factors, norms = self._polars(active, inners=need_A0)     # every polar(M), one call
        A0 = self._nuclear_norm_sum(active, norms) if need_A0 else 0.0
        c = rho * A0 if self.hybrid_norm else rho
        ratio = float("inf")
        D: dict[int, list[Tensor]] = {}
        if self.uses_loss:
            B_sq, x_dot_m = self._adam_terms(active, D)
            ratio = self._momo_ratio(f, x_dot_g, x_dot_m, c * A0 + B_sq)
        keep_norms = need_A0 and self.defaults["stale_nuclear_norm"]
        if self.uses_loss:  # the Momo step t = min(lr, ratio) of the first group, for logs
            self.state["momo"]["t"] = min(self.param_groups[0]["lr"], ratio)
        for group, ps, _, states in active:
            lr, wd = group["lr"], group["weight_decay"]
            t = min(lr, ratio)
            if wd != 0.0:
                torch._foreach_mul_(ps, 1 - lr * wd)
            if group["matrix"]:
                if keep_norms:
                    for p, state in zip(ps, states, strict=True):
                        state["nuclear_norm"] = norms[p]
                torch._foreach_add_(ps, [factors[p] for p in ps], alpha=-t * c)  # W -= t c P
            else:
                denominators = D.get(id(group)) or self._denominators(group, ps)
                torch._foreach_addcdiv_(ps, [state["m"] for state in states], denominators,
                                        value=-t)                   # w -= t m / D
        return loss
