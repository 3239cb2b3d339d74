"""MuonMax and MuonMax-Momo against the closed form computed by hand on a 2-layer net."""

import pytest
import torch
from optim_helpers import LR, WD, hand_steps, loss_and_grads, run, two_layer_net

from raystudy.algorithms.optim import MuonMax, MuonMaxMomo, matrix_param_groups


@pytest.fixture
def net():
    return two_layer_net()


@pytest.mark.parametrize("stale", [True, False])
def test_muonmax_matches_closed_form(net, stale):
    expected = hand_steps(net, steps=3, hybrid_norm=True, stale=stale)
    got = run(net, MuonMax, steps=3, stale_nuclear_norm=stale)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a.detach(), b, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize(("stale", "f_star"), [(True, 0.0), (False, 0.3)])
def test_muonmax_momo_matches_closed_form(net, stale, f_star):
    expected = hand_steps(net, steps=3, hybrid_norm=True, stale=stale, momo=True, f_star=f_star)
    got = run(net, MuonMaxMomo, steps=3, stale_nuclear_norm=stale, f_star=f_star)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a.detach(), b, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("positive_part", [True, False])
def test_positive_part_when_model_below_f_star(net, positive_part):
    w0 = [p.detach().clone() for p in net.parameters()]
    expected = hand_steps(
        net, 1, hybrid_norm=True, stale=True, momo=True, f_star=50.0, positive_part=positive_part
    )
    opt_params = run(net, MuonMaxMomo, 1, f_star=50.0, positive_part=positive_part)
    for a, b in zip(opt_params, expected, strict=True):
        torch.testing.assert_close(a.detach(), b, atol=1e-10, rtol=1e-10)
    if positive_part:
        for a, b in zip(opt_params, w0, strict=True):
            torch.testing.assert_close(a.detach(), (1 - LR * WD) * b)


def test_momo_needs_loss(net):
    loss_and_grads(net, 0)
    opt = MuonMaxMomo(matrix_param_groups(net))
    with pytest.raises(ValueError, match="needs the loss"):
        opt.step()
    opt.step(closure=lambda: loss_and_grads(net, 0))
    assert 0 < opt.state["momo"]["t"] <= opt.param_groups[0]["lr"]  # t = min(lr, ratio)


def test_a_stale_and_a_fresh_nuclear_norm_in_one_step():
    """Two same-shape matrices, the second without a gradient at first: at step 2 the
    first's A_0 term is stale and the second's fresh, both factors from one batched call
    (a second call into the same buffers would overwrite the first's factor)."""
    from raystudy.algorithms.optim.polar import polar_factor

    gen = torch.Generator().manual_seed(4)
    W = [torch.nn.Parameter(torch.randn(6, 4, generator=gen, dtype=torch.float64))
         for _ in range(2)]
    rho, mu, lr, wd = 10.0, 0.95, 0.01, 0.1
    opt = MuonMax([{"params": W, "matrix": True}], lr=lr, weight_decay=wd, rho=rho,
                  momentum=mu)
    expected = [w.detach().clone() for w in W]
    grads = [[torch.randn(6, 4, generator=gen, dtype=torch.float64), None],
             [torch.randn(6, 4, generator=gen, dtype=torch.float64),
              torch.randn(6, 4, generator=gen, dtype=torch.float64)]]
    M: list = [None, None]
    stale: list = [None, None]
    for step_grads in grads:
        for w, g in zip(W, step_grads, strict=True):
            w.grad = None if g is None else g.clone()
        opt.step()
        active = [i for i, g in enumerate(step_grads) if g is not None]
        P, fresh = {}, {}
        for i in active:
            g = step_grads[i]
            M[i] = g.clone() if M[i] is None else mu * M[i] + (1 - mu) * g
            P[i] = polar_factor(M[i], "polar_express", 5)
            fresh[i] = float((M[i] * P[i]).sum())
        A0 = sum(stale[i] if stale[i] is not None else fresh[i] for i in active)
        for i in active:
            expected[i] = (1 - lr * wd) * expected[i] - lr * rho * A0 * P[i]
            stale[i] = fresh[i]
    for w, e in zip(W, expected, strict=True):
        torch.testing.assert_close(w.detach(), e, atol=1e-12, rtol=1e-12)
