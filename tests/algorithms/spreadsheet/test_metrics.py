"""Pooled rates and offline accuracy against counts worked out by hand."""

from __future__ import annotations

import pytest

from raystudy.algorithms.spreadsheet import (
    OnlineResult,
    make_predictor,
    offline_accuracy,
    parse_action,
    summarize,
)


def result(user, saved, accepted, rejected, abstained, calls):
    return OnlineResult(user_actions=user, saved=saved, accepted=accepted, rejected=rejected,
                        abstained=abstained, calls=calls, saved_rate=saved / (user + saved))


def test_summarize_pools_counts_before_dividing():
    s = summarize([result(6, 4, 3, 1, 2, 6), result(15, 0, 0, 3, 5, 8)])
    assert s["saved_rate"] == pytest.approx(4 / 25)          # not the mean 0.2 of 0.4 and 0
    assert s["net_saved_rate"] == pytest.approx((4 - 4) / 25)
    assert s["rejected_per_shown"] == pytest.approx(4 / 7)
    assert s["calls_per_user_action"] == pytest.approx(14 / 21)
    assert s["abstained_per_call"] == pytest.approx(7 / 14)
    assert (s["actions"], s["saved"], s["calls"]) == (25, 4, 14)


def test_summarize_of_nothing_shown_is_zero_not_nan():
    s = summarize([result(3, 0, 0, 0, 2, 2)])
    assert s["rejected_per_shown"] == 0.0 and s["saved_rate"] == 0.0
    assert summarize([])["calls_per_user_action"] == 0.0


def test_offline_accuracy_by_hand():
    A = parse_action
    trajectory = [A("FONT_BOLD | A1 | true"), A("FONT_BOLD | B1 | true"),
                  A("FONT_BOLD | C1 | true"), A("FONT_BOLD | C2 | true")]
    # repeat after t=1: no pair (miss); t=2: C1 (hit); t=3: D1, truth C2 (miss)
    assert offline_accuracy(make_predictor("repeat"), [trajectory]) == pytest.approx(1 / 3)
    assert offline_accuracy(make_predictor("oracle", trajectory=trajectory), [trajectory]) == 1
    assert offline_accuracy(make_predictor("repeat"), [trajectory[:1], []]) == 0.0
