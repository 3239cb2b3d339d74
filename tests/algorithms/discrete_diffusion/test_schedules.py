"""Schedules: end points, and the derivative against central finite differences."""

from __future__ import annotations

import math

import pytest
import torch

from raystudy.algorithms.discrete_diffusion import CosineAlpha, LinearAlpha


@pytest.mark.parametrize("schedule", [LinearAlpha(), LinearAlpha(eps=0.1), CosineAlpha(),
                                      CosineAlpha(eps=0.05)])
def test_alpha_falls_from_one_and_dalpha_is_its_derivative(schedule):
    t = torch.linspace(0.01, 0.99, 41, dtype=torch.float64)
    h = 1e-6
    finite = (schedule.alpha(t + h) - schedule.alpha(t - h)) / (2 * h)
    torch.testing.assert_close(schedule.dalpha(t), finite, rtol=1e-7, atol=1e-9)
    assert schedule.alpha(0.0) == pytest.approx(1.0, abs=1e-15)
    alphas = schedule.alpha(t)
    assert (alphas[1:] < alphas[:-1]).all() and (alphas > 0).all()
    # floats in, floats out, agreeing with the tensor path
    assert isinstance(schedule.alpha(0.3), float) and isinstance(schedule.dalpha(0.3), float)
    assert schedule.alpha(0.3) == pytest.approx(float(schedule.alpha(torch.tensor(0.3,
                                                dtype=torch.float64))), rel=1e-15)


def test_end_points_match_the_closed_forms():
    eps = 1e-3
    assert LinearAlpha(eps).alpha(1.0) == pytest.approx(eps, rel=1e-12)
    assert LinearAlpha(eps).dalpha(0.7) == -(1 - eps)
    # 1 - cos(pi eps / 2), computed here the direct way
    assert CosineAlpha(eps).alpha(1.0) == pytest.approx(1 - math.cos(math.pi * eps / 2),
                                                        rel=1e-6)
    assert CosineAlpha(eps).alpha(0.5) == pytest.approx(
        1 - math.cos(math.pi / 2 * (1 - (1 - eps) * 0.5)), rel=1e-14)


def test_eps_outside_the_unit_interval_raises():
    with pytest.raises(ValueError, match="eps"):
        LinearAlpha(eps=1.0)
    with pytest.raises(ValueError, match="eps"):
        CosineAlpha(eps=-0.1)
