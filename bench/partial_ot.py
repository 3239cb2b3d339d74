"""The converged entropic partial OT of diffusion_condensation: Newton on the semi-dual (with
eps-scaling, the default) against log-domain Sinkhorn run to the same row error, on the
study's candidate batches (B candidate sets of K selected points against n = 60 pool points).

    .venv/bin/python bench/partial_ot.py            # ~1 minute on one core
    .venv/bin/python bench/partial_ot.py --device cuda

Per case: each solver's median time over interleaved repetitions, Sinkhorn's sweeps, the
ratio, and both plans' row errors (Sinkhorn is capped at --max-sweeps; a capped run is
marked, its time then a lower bound). The cases are the greedy stage (B = 59, K = 2), the
swap stage (B = 500, K + 1 = 11 rows) and balanced OT (kappa = 1), at the study's eps_rel
0.05 and the ablation's 0.02.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from _hardware import describe

from raystudy.algorithms.condensation.partial_ot import marginals, partial_ot, row_error
from raystudy.studies.diffusion_condensation.data import mixture


def sinkhorn_to_tol(C: torch.Tensor, kappa: float, eps: float, tol: float,
                    max_sweeps: int) -> tuple[torch.Tensor, int]:
    """Log-domain Sinkhorn, the row error checked every 10 sweeps (the previous default)."""
    K = C.shape[-2]
    C_aug, mu, nu = marginals(C, kappa)
    M, log_mu, log_nu = -C_aug / eps, mu.log(), nu.log()
    g = torch.zeros(*M.shape[:-2], M.shape[-1], dtype=M.dtype, device=M.device)
    for sweep in range(1, max_sweeps + 1):
        f = log_mu - torch.logsumexp(M + g.unsqueeze(-2), dim=-1)
        g = log_nu - torch.logsumexp(M + f.unsqueeze(-1), dim=-2)
        if sweep % 10 == 0:
            P = torch.exp(M + f.unsqueeze(-1) + g.unsqueeze(-2))
            if float((P.sum(-1) - mu).abs().sum(-1).max()) < tol:
                break
    return torch.exp(M + f.unsqueeze(-1) + g.unsqueeze(-2))[..., :K, :], sweep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tol", type=float, default=1e-9)
    ap.add_argument("--max-sweeps", type=int, default=5_000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(describe())
    m = mixture(0, 4, 8, 60, 500)
    X = m.x_train[m.y_train == 0]
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    rng = np.random.default_rng(0)
    print(f"{'case':<34} {'newton s':>9} {'sinkhorn s':>10} {'sweeps':>7} {'ratio':>7} "
          f"{'row err N':>10} {'row err S':>10}")
    for name, B, K, kappa in (("greedy, K=2, kappa 1.05", 59, 2, 1.05),
                              ("swaps, K=10, kappa 1.05", 500, 10, 1.05),
                              ("balanced, K=10, kappa 1", 500, 10, 1.0)):
        for eps_rel in (0.05, 0.02):
            sets = np.array([rng.choice(60, K, replace=False) for _ in range(B)])
            C = torch.as_tensor(D[sets], device=args.device)
            eps = eps_rel * float(np.median(D))
            t_n, t_s = [], []
            for _ in range(args.reps):  # interleaved
                t0 = time.perf_counter()
                _, P_n = partial_ot(C, kappa, eps, None, tol=args.tol)
                t_n.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                P_s, sweeps = sinkhorn_to_tol(C, kappa, eps, args.tol, args.max_sweeps)
                t_s.append(time.perf_counter() - t0)
            n, s = statistics.median(t_n), statistics.median(t_s)
            capped = "*" if sweeps >= args.max_sweeps else " "
            err_n, err_s = float(row_error(P_n).max()), float(row_error(P_s).max())
            print(f"{name + f', eps_rel {eps_rel}':<34} {n:9.3f} {s:10.3f} {sweeps:6d}{capped} "
                  f"{s / n:6.1f}x {err_n:10.1e} {err_s:10.1e}")
    print("ratio = Sinkhorn's time / Newton's (higher: Newton faster); * Sinkhorn stopped at "
          "--max-sweeps before the tolerance")


if __name__ == "__main__":
    main()
