"""One-sided partial optimal transport for GADC's subset selection (Cui et al., ICML 2026).

The LP (research note §3.1; raystudy's reading of the authors' code, selection/*/select.py):

    min_T <T, C>  s.t.  T 1_n = 1/K 1_K,  T^T 1_K <= kappa/n 1_n,  T >= 0

with C (K, n) the squared distances from the K selected points to the n real points and
kappa >= 1 the capacity factor: a share (kappa - 1)/kappa of the real mass may stay
unmatched; kappa = 1 is balanced OT. Balanced by a dummy source row of supply kappa - 1.

* ``partial_ot(C, kappa, eps, iterations=None)``: log-domain Sinkhorn on the augmented
  problem (dummy cost 0), batched over leading dims, run to a row error < ``tol`` when
  ``iterations`` is None; returns the real rows' transport cost and the plan.
* ``gadc_shipped_cost``: the authors' variant as shipped (scaling domain, u = v = 1, the
  dummy row at 0.05 median(C), 20 iterations, last update on the columns).
* ``partial_lp``: the exact LP by scipy ``linprog`` (HiGHS), the tests' reference.
"""

from __future__ import annotations

import numpy as np
import torch


def _augment(C: torch.Tensor, kappa: float, dummy: float | torch.Tensor = 0.0):
    K, n = C.shape[-2], C.shape[-1]
    row = torch.zeros(*C.shape[:-2], 1, n, dtype=C.dtype) + dummy
    C_aug = torch.cat([C, row], dim=-2)
    mu = torch.full((K + 1,), 1.0 / K, dtype=C.dtype)
    mu[-1] = max(kappa - 1.0, 1e-300 if kappa > 1 else 0.0)
    nu = torch.full((n,), kappa / n, dtype=C.dtype)
    return C_aug, mu, nu


def partial_ot(C: torch.Tensor, kappa: float, eps: float, iterations: int | None = None,
               tol: float = 1e-9, max_iterations: int = 200_000
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Entropic one-sided partial OT, log domain. C: ``(..., K, n)``; eps absolute.

    Returns ``(cost, plan)``: cost ``(...)`` = sum_ij T_ij C_ij over the real rows, plan
    ``(..., K, n)``. ``iterations=None`` iterates to an L1 row-marginal error < tol.
    """
    C = torch.as_tensor(C, dtype=torch.float64)
    K = C.shape[-2]
    if kappa == 1.0:  # balanced: no dummy row
        C_aug, mu, nu = C, torch.full((K,), 1.0 / K, dtype=C.dtype), torch.full(
            (C.shape[-1],), 1.0 / C.shape[-1], dtype=C.dtype)
    else:
        C_aug, mu, nu = _augment(C, kappa)
    log_mu, log_nu = mu.log(), nu.log()
    f = torch.zeros(C_aug.shape[:-1], dtype=C.dtype)
    g = torch.zeros(*C_aug.shape[:-2], C_aug.shape[-1], dtype=C.dtype)
    M = -C_aug / eps
    limit = iterations if iterations is not None else max_iterations
    for it in range(limit):
        f = log_mu - torch.logsumexp(M + g.unsqueeze(-2), dim=-1)
        g = log_nu - torch.logsumexp(M + f.unsqueeze(-1), dim=-2)
        if iterations is None and it % 10 == 9:
            P = torch.exp(M + f.unsqueeze(-1) + g.unsqueeze(-2))
            if float((P.sum(-1) - mu).abs().sum(-1).max()) < tol:
                break
    P = torch.exp(M + f.unsqueeze(-1) + g.unsqueeze(-2))[..., :K, :]
    return (P * C).sum((-2, -1)), P


def row_error(plan: torch.Tensor) -> torch.Tensor:
    """L1 error of the subset's marginal: sum_i |T_i. - 1/K| ``(...)``."""
    K = plan.shape[-2]
    return (plan.sum(-1) - 1.0 / K).abs().sum(-1)


def gadc_shipped_cost(C: torch.Tensor, kappa: float, eps: float, n_iter: int = 20,
                      dummy_cost_factor: float = 0.05,
                      dummy_cost: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The authors' ``partial_single_sided_ot_cost_batched`` as shipped: scaling-domain
    Sinkhorn on exp(-C_aug/eps) (clamped at 1e-300), u = v = 1, ``n_iter`` iterations of
    u = mu/(K v), v = nu/(K^T u); dummy cost 0.05 median(C) over the batch. Returns
    ``(cost, plan)`` of the real rows."""
    C = torch.as_tensor(C, dtype=torch.float64)
    delta = float(dummy_cost) if dummy_cost is not None else dummy_cost_factor * float(
        C.median())
    C_aug, mu, nu = _augment(C, kappa, delta)
    Kmat = torch.exp(-C_aug / eps).clamp_min(1e-300)
    u = torch.ones(C_aug.shape[:-1], dtype=C.dtype)
    v = torch.ones(*C_aug.shape[:-2], C_aug.shape[-1], dtype=C.dtype)
    for _ in range(n_iter):
        u = mu / (Kmat @ v.unsqueeze(-1)).squeeze(-1)
        v = nu / (Kmat.transpose(-2, -1) @ u.unsqueeze(-1)).squeeze(-1)
    P = (u.unsqueeze(-1) * Kmat * v.unsqueeze(-2))[..., :-1, :]
    return (P * C).sum((-2, -1)), P


def partial_lp(C: np.ndarray, kappa: float) -> float:
    """Exact value of the LP by scipy linprog (HiGHS); C ``(K, n)``, tiny problems."""
    from scipy.optimize import linprog

    C = np.asarray(C, float)
    K, n = C.shape
    A_eq = np.kron(np.eye(K), np.ones((1, n)))
    A_ub = np.kron(np.ones((1, K)), np.eye(n))
    res = linprog(C.ravel(), A_ub=A_ub, b_ub=np.full(n, kappa / n), A_eq=A_eq,
                  b_eq=np.full(K, 1.0 / K), bounds=(0, None), method="highs")
    return float(res.fun)
