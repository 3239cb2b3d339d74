"""Momo and Momo-Adam against step-by-step hand computations of Schaipp et al.'s formulas."""

import pytest
import torch

from raystudy.algorithms.optim import Momo, MomoAdam

A = torch.tensor([[1.0, 2.0, 0.5], [0.0, 1.0, -1.0], [2.0, -1.0, 1.0], [1.0, 1.0, 1.0]]).double()
Y = torch.tensor([1.0, -2.0, 0.5, 3.0]).double()
X0 = torch.tensor([0.3, -0.2, 0.1]).double()


def loss_grad(x):
    r = A @ x - Y
    return float(0.5 * (r @ r)), A.T @ r


def hand_momo(steps, lr, wd, beta, f_star, bias_correction, online, adam_betas=None, eps=1e-8):
    """Momo (or Momo-Adam when ``adam_betas``) on a flat vector, formula by formula."""
    x, f0 = X0.clone(), f_star
    d = torch.zeros(3, dtype=torch.float64)
    v = torch.zeros(3, dtype=torch.float64)
    f_bar = gamma = 0.0
    for k in range(1, steps + 1):
        f, g = loss_grad(x)
        if k == 1 and not bias_correction:
            d, f_bar, gamma = g.clone(), f, float(g @ x)
        d = beta * d + (1 - beta) * g
        f_bar = beta * f_bar + (1 - beta) * f
        gamma = beta * gamma + (1 - beta) * float(g @ x)
        rho = 1 - beta**k if bias_correction else 1.0
        if adam_betas is None:
            D = torch.ones(3, dtype=torch.float64)
        else:
            v = adam_betas[1] * v + (1 - adam_betas[1]) * g**2
            D = eps + (v / (1 - adam_betas[1] ** k)).sqrt()
        c = 1 + lr * wd
        x_dot_d, norm_sq = float(d @ x), float(d @ (d / D))
        if online:
            cap = c * f_bar + x_dot_d - c * gamma
            if cap < c * rho * f_star:
                f_star = max(cap / (2 * c * rho), f0)
        num = c * (f_bar - rho * f_star) + x_dot_d - c * gamma
        tau = min(lr / rho, max(num, 0.0) / norm_sq)
        if online:
            f_star = max((f_bar + x_dot_d - gamma - 0.5 * tau * norm_sq) / rho, f0)
        x = (x - tau * d / D) / c
    return x, f_star


def run(opt_cls, steps, **kwargs):
    x = torch.nn.Parameter(X0.clone())
    opt = opt_cls([x], **kwargs)
    for k in range(steps):
        f, g = loss_grad(x.detach())
        x.grad = g
        if k % 2:
            opt.step(loss=torch.tensor(f, dtype=torch.float64))
        else:
            opt.step(closure=lambda f=f: f)
    return x.detach(), opt


CASES = [
    dict(lr=1.0, wd=0.0, f_star=0.0, bias_correction=False, online=False),
    dict(lr=0.5, wd=0.1, f_star=0.0, bias_correction=True, online=False),
    dict(lr=1.0, wd=0.01, f_star=0.5, bias_correction=False, online=True),
    dict(lr=0.05, wd=0.0, f_star=3.0, bias_correction=True, online=False),
]


@pytest.mark.parametrize("case", CASES)
def test_momo_matches_hand_computation(case):
    x_hand, f_star = hand_momo(5, beta=0.9, **case)
    x, opt = run(
        Momo,
        5,
        lr=case["lr"],
        weight_decay=case["wd"],
        beta=0.9,
        f_star=case["f_star"],
        bias_correction=case["bias_correction"],
        online_f_star=case["online"],
    )
    torch.testing.assert_close(x, x_hand, atol=1e-12, rtol=1e-12)
    assert opt.state["momo"]["f_star"] == pytest.approx(f_star, abs=1e-12)


@pytest.mark.parametrize("case", CASES)
def test_momo_adam_matches_hand_computation(case):
    betas = (0.9, 0.99)
    x_hand, _ = hand_momo(5, beta=0.9, adam_betas=betas, **{**case, "bias_correction": True})
    x, _ = run(
        MomoAdam,
        5,
        lr=case["lr"],
        weight_decay=case["wd"],
        betas=betas,
        f_star=case["f_star"],
        online_f_star=case["online"],
    )
    torch.testing.assert_close(x, x_hand, atol=1e-12, rtol=1e-12)


def test_momo_needs_the_loss():
    x = torch.nn.Parameter(X0.clone())
    x.grad = torch.ones(3, dtype=torch.float64)
    with pytest.raises(ValueError, match="needs the loss"):
        Momo([x]).step()
    with pytest.raises(ValueError, match="not both"):
        Momo([x]).step(closure=lambda: 1.0, loss=1.0)


def test_inner_and_inner_sum_equal_the_dot_products():
    from raystudy.algorithms.optim.truncation import inner, inner_sum

    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(3, 4, generator=g, dtype=torch.float64), torch.randn(5, generator=g)]
    ys = [torch.randn(3, 4, generator=g, dtype=torch.float64), torch.randn(5, generator=g)]
    dots = [float((x.double() * y.double()).sum()) for x, y in zip(xs, ys, strict=True)]
    assert float(inner(xs[0], ys[0])) == pytest.approx(dots[0], rel=1e-12)
    assert inner(xs[1], ys[1]).dtype == torch.float32
    assert inner(xs[1].half(), ys[1].half()).dtype == torch.float32
    assert float(inner_sum(xs, ys)) == pytest.approx(sum(dots), rel=1e-6)
    assert inner_sum([], []) == 0.0
