"""Tiny models and gradients shared by the optimizer tests."""

import copy

import torch
from torch import nn

from raystudy.algorithms.optim import matrix_param_groups

LR, WD, RHO, MU, EPS = 0.05, 0.1, 10.0, 0.95, 1e-8


def two_layer_net(dtype=torch.float64, seed=0) -> nn.Sequential:
    """Linear(5, 4) -> tanh -> Linear(4, 3): one hidden matrix, head and biases in Adam."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3)).to(dtype)


def loss_and_grads(model: nn.Module, seed: int) -> float:
    """Fill ``p.grad`` with a fresh mini-batch's gradients; return the loss."""
    gen = torch.Generator().manual_seed(seed)
    dtype = next(model.parameters()).dtype
    x = torch.randn(8, 5, generator=gen, dtype=dtype)
    y = torch.randn(8, 3, generator=gen, dtype=dtype)
    model.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    return float(loss.detach())


def svd_polar_and_nuclear(M):
    U, S, Vh = torch.linalg.svd(M, full_matrices=False)
    return U @ Vh, S.sum()


def hand_steps(net, steps, hybrid_norm, stale, momo=False, f_star=0.0, positive_part=True):
    """RESEARCH.md sec. 1 written out on ``two_layer_net``; returns the final parameters.

    MuonMax (``hybrid_norm``): matrix step ``rho*A0*polar(M)``, Momo slope ``rho*A0^2 + B^2``;
    MuonAdam: matrix step ``rho*polar(M)``, Momo slope ``rho*A0 + B^2``.
    """
    net = copy.deepcopy(net)
    W = net[0].weight.detach().clone()
    vec = [p.detach().clone() for p in (net[0].bias, net[2].weight, net[2].bias)]
    M, m, v, prev_nuc, F_bar = None, None, None, None, None
    for k in range(steps):
        with torch.no_grad():
            net[0].weight.copy_(W)
            for p, w in zip((net[0].bias, net[2].weight, net[2].bias), vec, strict=True):
                p.copy_(w)
        f = loss_and_grads(net, seed=k)
        G = net[0].weight.grad.clone()
        g = [p.grad.clone() for p in (net[0].bias, net[2].weight, net[2].bias)]
        M = G.clone() if M is None else MU * M + (1 - MU) * G
        m = g if m is None else [MU * a + (1 - MU) * b for a, b in zip(m, g, strict=True)]
        v = (
            [gi**2 for gi in g]
            if v is None
            else [MU * a + (1 - MU) * b**2 for a, b in zip(v, g, strict=True)]
        )
        P, nuc = svd_polar_and_nuclear(M)
        A0 = prev_nuc if (stale and prev_nuc is not None) else nuc
        prev_nuc = nuc
        D = [EPS + vi.sqrt() for vi in v]
        t = LR
        if momo:
            x_dot_g = (W * G).sum() + sum((w * gi).sum() for w, gi in zip(vec, g, strict=True))
            x_dot_m = (W * M).sum() + sum((w * mi).sum() for w, mi in zip(vec, m, strict=True))
            F_k = f - float(x_dot_g)
            F_bar = F_k if F_bar is None else MU * F_bar + (1 - MU) * F_k
            B_sq = sum((mi**2 / Di).sum() for mi, Di in zip(m, D, strict=True))
            num = F_bar - f_star + float(x_dot_m)
            if positive_part:
                num = max(num, 0.0)
            c = RHO * A0 if hybrid_norm else RHO
            t = min(LR, num / float(c * A0 + B_sq))
        c = RHO * A0 if hybrid_norm else RHO
        W = (1 - LR * WD) * W - t * c * P
        vec = [(1 - LR * WD) * w - t * mi / Di for w, mi, Di in zip(vec, m, D, strict=True)]
    return [W, *vec]


def run(net, cls, steps, **kwargs):
    opt = cls(
        matrix_param_groups(net), lr=LR, weight_decay=WD, rho=RHO, polar_method="svd", **kwargs
    )
    for k in range(steps):
        f = loss_and_grads(net, seed=k)
        if opt.uses_loss:
            opt.step(loss=torch.tensor(f, dtype=torch.float64))
        else:
            opt.step()
    return [net[0].weight, net[0].bias, net[2].weight, net[2].bias]
