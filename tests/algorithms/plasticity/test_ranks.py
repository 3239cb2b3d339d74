"""Rank and dormant-unit definitions on matrices built with known singular values."""

from __future__ import annotations

import math

import pytest
import torch

from raystudy.algorithms.plasticity import (
    dead_units,
    dormant_fraction,
    dormant_scores,
    effective_rank,
    srank,
)


def with_singular_values(s: list[float], n: int, d: int, dtype=torch.float64, seed=0):
    """An n x d matrix U diag(s) V^T with random orthonormal U, V."""
    g = torch.Generator().manual_seed(seed)
    q = len(s)
    u, _ = torch.linalg.qr(torch.randn(n, q, generator=g, dtype=dtype))
    v, _ = torch.linalg.qr(torch.randn(d, q, generator=g, dtype=dtype))
    return u @ torch.diag(torch.tensor(s, dtype=dtype)) @ v.T


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_effective_rank_matches_the_entropy_of_the_normalised_singular_values(dtype):
    m = with_singular_values([3.0, 1.0, 0.0, 0.0], n=20, d=8, dtype=dtype)
    p = torch.tensor([0.75, 0.25], dtype=torch.float64)
    expected = math.exp(float(-(p * p.log()).sum()))  # 1.7548
    assert float(effective_rank(m)) == pytest.approx(expected, rel=1e-4)
    equal = with_singular_values([2.0] * 6, n=30, d=6, dtype=dtype)
    assert float(effective_rank(equal)) == pytest.approx(6.0, rel=1e-4)
    assert float(effective_rank(with_singular_values([5.0], 10, 4, dtype))) == pytest.approx(1.0)
    assert float(effective_rank(torch.zeros(5, 3, dtype=dtype))) == 0.0


def test_effective_rank_is_scale_invariant_and_has_finite_gradients_at_rank_deficiency():
    m = with_singular_values([4.0, 2.0, 1.0, 0.0, 0.0], n=12, d=7).requires_grad_()
    value = effective_rank(m)
    scaled = effective_rank(10 * m.detach())
    assert float(scaled) == pytest.approx(value.item(), rel=1e-10)
    (grad,) = torch.autograd.grad(value, m)
    assert torch.isfinite(grad).all() and grad.abs().sum() > 0


def test_effective_rank_gradient_agrees_with_finite_differences():
    g = torch.Generator().manual_seed(1)
    m = torch.randn(9, 5, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(effective_rank, (m,), eps=1e-6, atol=1e-6)


def test_srank_counts_the_singular_values_that_hold_one_minus_delta_of_the_sum():
    m = with_singular_values([5.0, 3.0, 1.0, 1.0], n=16, d=10)  # sum 10
    assert srank(m) == 4            # 0.99 * 10 = 9.9 needs all four
    assert srank(m, delta=0.1) == 3  # 9.0 = 5 + 3 + 1 exactly
    assert srank(m, delta=0.25) == 2  # 7.5 <= 8
    assert srank(m, delta=0.6) == 1
    assert srank(torch.zeros(4, 4)) == 0
    with pytest.raises(ValueError, match="delta"):
        srank(m, delta=1.0)


def test_dormant_scores_fraction_and_dead_units_on_a_hand_built_layer():
    # 4 samples x 5 units: mean |h| per unit = [1, 1, 0.02, 0, 2.98] -> overall mean 1.0
    h = torch.tensor([[1.0, 0.0, 0.08, 0.0, 2.98],
                      [1.0, 2.0, 0.00, 0.0, 2.98],
                      [1.0, 0.0, 0.00, 0.0, 2.98],
                      [1.0, 2.0, 0.00, 0.0, 2.98]])
    assert torch.allclose(dormant_scores(h), torch.tensor([1.0, 1.0, 0.02, 0.0, 2.98]))
    assert dormant_fraction(h, tau=0.0) == pytest.approx(0.2)    # only the dead unit
    assert dormant_fraction(h, tau=0.025) == pytest.approx(0.4)  # + the 0.02 unit
    assert dormant_fraction(h, tau=1.0) == pytest.approx(0.8)
    assert dead_units(h) == 1
    assert dead_units(torch.zeros(3, 7)) == 7
    assert dormant_fraction(torch.zeros(3, 7)) == 1.0


def test_conv_features_are_flattened_per_sample():
    h = torch.zeros(6, 2, 3, 3)
    h[:, 0] = 1.0
    assert dead_units(h) == 9 and srank(h) == 1
