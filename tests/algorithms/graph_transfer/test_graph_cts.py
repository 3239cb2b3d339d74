"""The CoTask Score on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from raystudy.algorithms.graph_transfer.cts import cotask_score, skill_ratio


def test_shared_encoder_as_good_as_both_specialists_scores_one():
    assert cotask_score(0.8, 0.8, 0.9, 0.9, nc_chance=0.25) == pytest.approx(1.0)


def test_small_lp_loss_by_hand():
    # r_NC = 1; r_LP = (0.85 - 0.5) / (0.9 - 0.5) = 0.875; HM = 2 * 0.875 / 1.875
    assert cotask_score(0.8, 0.8, 0.85, 0.9, nc_chance=0.25) == pytest.approx(0.9333333333)


def test_one_task_cannot_buy_the_other():
    # r_NC = (1.0 - 0.2) / (0.7 - 0.2) = 1.6; r_LP = (0.66 - 0.5) / (0.9 - 0.5) = 0.4
    assert skill_ratio(1.0, 0.7, 0.2) == pytest.approx(1.6)
    assert skill_ratio(0.66, 0.9, 0.5) == pytest.approx(0.4)
    assert cotask_score(1.0, 0.7, 0.66, 0.9, nc_chance=0.2) == pytest.approx(0.64)


def test_both_better_than_specialists_scores_above_one():
    # r_NC = 0.6 / 0.5 = 1.2, r_LP = 0.45 / 0.4 = 1.125 -> 2 * 1.35 / 2.325
    assert cotask_score(0.85, 0.75, 0.95, 0.9, nc_chance=0.25) == pytest.approx(2.7 / 2.325)


def test_a_task_at_or_below_chance_scores_zero():
    assert cotask_score(0.25, 0.8, 0.9, 0.9, nc_chance=0.25) == 0.0
    assert cotask_score(0.8, 0.8, 0.4, 0.9, nc_chance=0.25) == 0.0      # r_LP clipped at 0


def test_undefined_without_baseline_skill():
    assert math.isnan(cotask_score(0.8, 0.25, 0.9, 0.9, nc_chance=0.25))
    assert math.isnan(cotask_score(0.8, 0.8, 0.9, 0.45, nc_chance=0.25))
    assert math.isnan(cotask_score(math.nan, 0.8, 0.9, 0.9, nc_chance=0.25))
