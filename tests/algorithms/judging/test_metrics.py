"""Judge metrics on hand-made verdicts, against counts worked out by hand and scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

from raystudy.algorithms.judging import (
    agreement,
    cue_bias,
    macro_f1,
    mode_consistency,
    position_bias,
    position_consistency,
    tie_rate,
    verdict_of_scores,
)

V = np.array([0, 0, 1, 2, 1, 0, 2, 1])
V_SWAPPED = np.array([1, 0, 0, 2, 2, 1, 1, 1])
LABEL = np.array([0, 1, 1, 2, 1, 1, 2, 0])
LENGTH = np.array([[3, 1], [0, 5], [2, 2], [4, 1], [1, 6], [7, 7], [0, 3], [0, 2]])
SCORES = np.array([[9, 2], [3, 3], [1, 8], [5, 5], [6, 2], [7, 4], [4, 4], [2, 3]])


def test_agreement_and_tie_rate_by_hand():
    assert agreement(V, LABEL) == pytest.approx(5 / 8)       # pairs 0, 2, 3, 4, 6
    assert tie_rate(V) == pytest.approx(2 / 8)
    assert tie_rate(np.full(5, 2)) == 1.0


def test_position_bias_pools_decisive_verdicts_of_both_orders():
    # decisive: 6 as shown (first wins at 0, 1, 5) + 6 swapped (first wins at 1, 2): 5 of 12
    assert position_bias(V, V_SWAPPED) == pytest.approx(5 / 12 - 0.5)
    # a judge that always says "first" in both orders: bias 1/2 and no consistency
    assert position_bias(np.zeros(4), np.zeros(4)) == pytest.approx(0.5)
    assert position_bias(np.full(3, 2), np.full(3, 2)) == 0.0


def test_position_consistency_by_hand():
    # mirror(V) = [1, 1, 0, 2, 0, 1, 2, 0]; V_SWAPPED matches it at pairs 0, 2, 3, 5
    assert position_consistency(V, V_SWAPPED) == pytest.approx(4 / 8)
    assert position_consistency(np.zeros(4), np.zeros(4)) == 0.0
    assert position_consistency(np.full(4, 2), np.full(4, 2)) == 1.0


def test_cue_bias_counts_decisive_pairs_whose_cues_differ():
    # decisive with different lengths: pairs 0 (3>1, first wins: yes), 1 (0<5, first: no),
    # 4 (1<6, second: yes), 7 (0<2, second: yes) -> 3 of 4
    assert cue_bias(V, LENGTH) == pytest.approx(3 / 4 - 0.5)
    assert cue_bias(V, np.ones((8, 2))) == 0.0            # no pair's cues differ


def test_mode_consistency_by_hand():
    implied = verdict_of_scores(SCORES)
    assert implied.tolist() == [0, 2, 1, 2, 0, 0, 2, 1]
    assert mode_consistency(SCORES, V) == pytest.approx(6 / 8)   # all but pairs 1 and 4


def test_macro_f1_by_hand_and_against_sklearn():
    # class 0: TP 1, FP 2, FN 1 -> 2/5; class 1: TP 2, FP 1, FN 2 -> 4/7; class 2: 1
    assert macro_f1(V, LABEL) == pytest.approx((2 / 5 + 4 / 7 + 1) / 3)
    assert macro_f1(V, LABEL) == pytest.approx(f1_score(LABEL, V, average="macro"))
    # no tie anywhere: class 2 is left out, not scored 0
    assert macro_f1([0, 1, 1, 0], [0, 1, 0, 0]) == pytest.approx((4 / 5 + 2 / 3) / 2)
    # a class only the verdicts use scores 0
    assert macro_f1([0, 2], [0, 0]) == pytest.approx((2 / 3 + 0) / 2)
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(1, 30))
        v, y = rng.integers(0, 3, n), rng.integers(0, rng.integers(1, 4), n)
        present = sorted(set(v.tolist()) | set(y.tolist()))
        expected = f1_score(y, v, average="macro", labels=present, zero_division=0)
        assert macro_f1(v, y) == pytest.approx(expected)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: agreement([0, 1], [0, 1, 2]), "label"),
    (lambda: position_bias([0, 1], [1]), "v_swapped"),
    (lambda: position_consistency([0, 3], [1, 0]), "v"),
    (lambda: cue_bias([0, 1], np.zeros((3, 2))), "cue"),
    (lambda: mode_consistency(np.zeros((2, 3)), [0, 1]), "scores"),
    (lambda: tie_rate([]), "v"),
])
def test_bad_input_is_one_line_naming_the_argument(call, name):
    with pytest.raises(ValueError) as error:
        call()
    message = str(error.value)
    assert message.startswith(name) and "\n" not in message
