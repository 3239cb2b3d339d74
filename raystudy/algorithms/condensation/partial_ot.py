"""One-sided partial optimal transport for GADC's subset selection (Cui et al., ICML 2026).

The LP (research note §3.1; raystudy's reading of the authors' code, selection/*/select.py):

    min_T <T, C>  s.t.  T 1_n = 1/K 1_K,  T^T 1_K <= kappa/n 1_n,  T >= 0

with C (K, n) the squared distances from the K selected points to the n real points and
kappa >= 1 the capacity factor: a share (kappa - 1)/kappa of the real mass may stay
unmatched; kappa = 1 is balanced OT. Balanced by a dummy source row of supply kappa - 1.

* ``partial_ot(C, kappa, eps, iterations=None)``: the entropic problem on the augmented
  rows (dummy cost 0), batched over leading dims. ``iterations=None`` solves it to a row
  error < ``tol`` by damped Newton on the semi-dual (the K + 1 row potentials f, with the
  column potentials g eliminated in closed form: K + 1 unknowns, quadratic convergence, where
  Sinkhorn needs thousands of sweeps at balanced kappa = 1); an integer runs that many
  log-domain Sinkhorn sweeps. Both return the real rows' transport cost and the plan.
* ``partial_ot_exact``: the unregularised LP by POT (``ot.partial.partial_wasserstein``),
  one problem at a time; POT is optional.
* ``gadc_shipped_cost``: the authors' variant as shipped (scaling domain, u = v = 1, the
  dummy row at 0.05 median(C), 20 iterations, last update on the columns).
* ``partial_lp``: the exact LP by scipy ``linprog`` (HiGHS), the tests' reference.
"""

from __future__ import annotations

import numpy as np
import torch


def _augment(C: torch.Tensor, kappa: float, dummy: float | torch.Tensor = 0.0):
    K, n = C.shape[-2], C.shape[-1]
    row = torch.zeros(*C.shape[:-2], 1, n, dtype=C.dtype, device=C.device) + dummy
    C_aug = torch.cat([C, row], dim=-2)
    mu = torch.full((K + 1,), 1.0 / K, dtype=C.dtype, device=C.device)
    mu[-1] = max(kappa - 1.0, 1e-300 if kappa > 1 else 0.0)
    nu = torch.full((n,), kappa / n, dtype=C.dtype, device=C.device)
    return C_aug, mu, nu


def marginals(C: torch.Tensor, kappa: float
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(C_aug, mu, nu)``: the cost with the dummy row and the marginals it balances (at
    kappa = 1 the balanced problem: C itself, 1/K and 1/n)."""
    if kappa != 1.0:
        return _augment(C, kappa)
    K, n = C.shape[-2], C.shape[-1]
    return (C, torch.full((K,), 1.0 / K, dtype=C.dtype, device=C.device),
            torch.full((n,), 1.0 / n, dtype=C.dtype, device=C.device))


def partial_ot(C: torch.Tensor, kappa: float, eps: float, iterations: int | None = None,
               tol: float = 1e-9, max_iterations: int = 500
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Entropic one-sided partial OT. C: ``(..., K, n)``; eps absolute.

    Returns ``(cost, plan)``: cost ``(...)`` = sum_ij T_ij C_ij over the real rows, plan
    ``(..., K, n)``. ``iterations=None``: Newton to an L1 row-marginal error < tol (columns
    exact); an integer: that many Sinkhorn sweeps.
    """
    C = torch.as_tensor(C, dtype=torch.float64)
    K = C.shape[-2]
    C_aug, mu, nu = marginals(C, kappa)
    if iterations is None:
        # eps-scaling: from a temperature where exp(-C/eps) spans e^8 per row, halve eps
        # to the target, each stage's potentials (in units of its eps) starting the next
        spread = float((C_aug.amax(-1) - C_aug.amin(-1)).max())
        stages = max(0, int(np.ceil(np.log2(max(spread / eps, 1.0) / 8.0))))
        f = None
        for k in range(stages, -1, -1):
            f, P = _semidual_newton(-C_aug / (eps * 2**k), mu, nu, tol if k == 0 else 1e-3,
                                    max_iterations, None if f is None else 2 * f)
    else:
        P = _sinkhorn_log(-C_aug / eps, mu, nu, iterations)
    P = P[..., :K, :]
    return (P * C).sum((-2, -1)), P


def _sinkhorn_log(M: torch.Tensor, mu: torch.Tensor, nu: torch.Tensor, iterations: int,
                  potentials: bool = False) -> torch.Tensor:
    """``iterations`` Sinkhorn sweeps on the potentials of exp(M + f + g) (rows mu, cols nu):
    the plan, or the row potentials f after a last row update."""
    log_mu, log_nu = mu.log(), nu.log()
    g = torch.zeros(*M.shape[:-2], M.shape[-1], dtype=M.dtype, device=M.device)
    f = torch.zeros(M.shape[:-1], dtype=M.dtype, device=M.device)
    for _ in range(iterations):
        f = log_mu - torch.logsumexp(M + g.unsqueeze(-2), dim=-1)
        g = log_nu - torch.logsumexp(M + f.unsqueeze(-1), dim=-2)
    if potentials:
        return log_mu - torch.logsumexp(M + g.unsqueeze(-2), dim=-1)
    return torch.exp(M + f.unsqueeze(-1) + g.unsqueeze(-2))


def _semidual(M: torch.Tensor, f: torch.Tensor, mu: torch.Tensor, nu: torch.Tensor
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """F(f) = <mu, f> - sum_j nu_j LSE_i(M_ij + f_i) (the dual with g_j maximised out) and
    pi_ij = softmax_i(M_ij + f_i), so that the plan is T_ij = nu_j pi_ij."""
    Z = M + f.unsqueeze(-1)
    lse = torch.logsumexp(Z, dim=-2)
    return (mu * f).sum(-1) - (nu * lse).sum(-1), torch.exp(Z - lse.unsqueeze(-2))


def _semidual_newton(M: torch.Tensor, mu: torch.Tensor, nu: torch.Tensor, tol: float,
                     max_iterations: int, f: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Maximise the concave F over f ``(..., R)`` (from ``f``, else 10 Sinkhorn sweeps): a
    Newton step with backtracking (Armijo) where it is accepted within 8 halvings, a
    Sinkhorn sweep (an ascent step) where not. Returns ``(f, plan)``.

    grad F = mu - T 1 (the row error); -Hess F = diag(T 1) - pi diag(nu) pi^T, singular
    along 1 (F is shift-invariant) and grad is orthogonal to 1, so the step solves the
    system with 1 1^T added.
    """
    R = M.shape[-2]
    log_mu, log_nu = mu.log(), nu.log()
    if f is None:
        f = _sinkhorn_log(M, mu, nu, 10, potentials=True)  # a start where no row starves
    F, pi = _semidual(M, f, mu, nu)
    ones = torch.full((R, R), 1.0 / R, dtype=M.dtype, device=M.device)
    ridge = 1e-14 * torch.eye(R, dtype=M.dtype, device=M.device)
    for _ in range(max_iterations):
        T = pi * nu.unsqueeze(-2)
        rows = T.sum(-1)
        grad = mu - rows
        err = grad.abs().sum(-1)
        if float(err.max()) < tol:
            break
        A = torch.diag_embed(rows) - T @ pi.transpose(-2, -1) + ones + ridge
        step = torch.linalg.solve(A, grad)
        slope = (grad * step).sum(-1)
        t = torch.ones_like(F)
        for _ in range(8):
            F_new, pi_new = _semidual(M, f + t.unsqueeze(-1) * step, mu, nu)
            err_new = (mu - (pi_new * nu.unsqueeze(-2)).sum(-1)).abs().sum(-1)
            ok = (F_new >= F + 1e-4 * t * slope) | (err_new <= 0.5 * err)
            if bool(ok.all()):
                break
            t = torch.where(ok, t, t / 2)
        if bool(ok.all()):  # the last trial point is the new iterate, F and pi with it
            f, F, pi = f + t.unsqueeze(-1) * step, F_new, pi_new
            continue
        g = log_nu - torch.logsumexp(M + f.unsqueeze(-1), dim=-2)
        sweep = log_mu - torch.logsumexp(M + g.unsqueeze(-2), dim=-1)
        f = torch.where(ok.unsqueeze(-1), f + t.unsqueeze(-1) * step, sweep)
        F, pi = _semidual(M, f, mu, nu)
    return f, pi * nu.unsqueeze(-2)


def partial_ot_exact(C: np.ndarray, kappa: float) -> tuple[float, np.ndarray]:
    """The LP's value and plan by POT: every subset row ships 1/K, each real column takes at
    most kappa/n, total mass 1 (``ot.partial.partial_wasserstein``; ``ot.emd`` at kappa =
    1). C ``(K, n)``."""
    import ot.partial

    C = np.asarray(C, float)
    K, n = C.shape
    a, b = np.full(K, 1.0 / K), np.full(n, kappa / n)
    plan = ot.emd(a, b, C) if kappa == 1.0 else ot.partial.partial_wasserstein(a, b, C, m=1.0)
    return float((plan * C).sum()), plan


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
    u = torch.ones(C_aug.shape[:-1], dtype=C.dtype, device=C.device)
    v = torch.ones(*C_aug.shape[:-2], C_aug.shape[-1], dtype=C.dtype, device=C.device)
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
