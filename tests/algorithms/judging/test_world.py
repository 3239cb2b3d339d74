"""The judging world (cues independent of quality, exact swap, tokens that show quality and
cues) and the biased teacher, whose measured biases must match its parameters."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from raystudy.algorithms.judging import (
    biased_teacher,
    cue_bias,
    make_world,
    position_bias,
    teacher_scores,
)
from raystudy.algorithms.judging.world import FILL, FORMAT_TOKENS, OK, SOURCE0

FIELDS = ("quality", "length", "format", "provenance", "label", "question", "answer",
          "tokens", "point_tokens")
CUES = ("length", "format", "provenance")


def _segment(pairs, side):
    """The tokens of the response shown first (side 0) or second (side 1)."""
    width = pairs.question.shape[1] + pairs.max_pad + 2
    start = 2 + side * (width + 1)
    return pairs.tokens[:, start:start + width]


def test_deterministic_per_seed():
    a, b, c = make_world(200, seed=3), make_world(200, seed=3), make_world(200, seed=4)
    assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in FIELDS)
    assert not np.array_equal(a.tokens, c.tokens)


def test_cues_are_uncorrelated_with_quality():
    n = 40_000
    pairs = make_world(n, seed=1, n_sources=3)
    bound = 4 / np.sqrt(n)                    # 4 standard errors of a correlation near 0
    gap = pairs.quality[:, 0] - pairs.quality[:, 1]
    for name in CUES:
        cue = getattr(pairs, name)
        for side in (0, 1):
            assert abs(np.corrcoef(pairs.quality[:, side], cue[:, side])[0, 1]) < bound, name
        assert abs(np.corrcoef(gap, cue[:, 0] - cue[:, 1])[0, 1]) < bound, name
        # the oracle's verdicts show no cue bias either
        decisive = (pairs.label != 2) & (cue[:, 0] != cue[:, 1])
        assert abs(cue_bias(pairs.label, cue)) < 2 / np.sqrt(decisive.sum()), name
    decisive = pairs.label != 2
    assert abs(np.mean(pairs.label[decisive] == 0) - 0.5) < 2 / np.sqrt(decisive.sum())


def test_labels_follow_the_quality_gap():
    pairs = make_world(500, seed=2)
    gap = pairs.quality[:, 0] - pairs.quality[:, 1]
    assert np.array_equal(pairs.label == 2, np.abs(gap) < pairs.tie_margin)
    assert (gap[pairs.label == 0] > 0).all() and (gap[pairs.label == 1] < 0).all()
    assert 0.1 < np.mean(pairs.label == 2) < 0.25      # P(equal counts) = 1/6 for K = 5


def test_tokens_show_quality_and_every_cue():
    pairs = make_world(300, seed=5, n_sources=3)
    K = pairs.question.shape[1]
    for side in (0, 1):
        seg = _segment(pairs, side)
        assert np.array_equal(seg[:, 0], SOURCE0 + pairs.provenance[:, side])
        assert np.array_equal(seg[:, 1], np.array(FORMAT_TOKENS)[pairs.format[:, side]])
        assert np.array_equal((seg[:, 2:2 + K] == OK).sum(1), np.rint(pairs.quality[:, side] * K))
        assert np.array_equal((seg[:, 2 + K:] == FILL).sum(1), pairs.length[:, side])
        point = pairs.point_tokens[:, side]
        assert np.array_equal(point[:, 2:-1], seg)
    assert pairs.tokens.max() < pairs.vocab_size and pairs.tokens.min() >= 0


def test_swap_is_exact():
    pairs = make_world(400, seed=6)
    swapped = pairs.swap()
    for name in ("quality", *CUES):
        assert np.array_equal(getattr(swapped, name), getattr(pairs, name)[:, ::-1])
    assert np.array_equal(swapped.label, np.array([1, 0, 2])[pairs.label])
    assert np.array_equal(_segment(swapped, 0), _segment(pairs, 1))
    assert np.array_equal(_segment(swapped, 1), _segment(pairs, 0))
    assert np.array_equal(swapped.point_tokens, pairs.point_tokens[:, ::-1])
    twice = swapped.swap()
    assert all(np.array_equal(getattr(twice, f), getattr(pairs, f)) for f in FIELDS)


def test_with_cues_and_the_cue_free_split():
    pairs = make_world(200, seed=7)
    padded = pairs.with_cues(length=np.full((200, 2), pairs.max_pad))
    assert np.array_equal(padded.quality, pairs.quality)
    assert np.array_equal(padded.label, pairs.label)
    assert ((_segment(padded, 0) == FILL).sum(1) == pairs.max_pad).all()
    base = make_world(200, seed=7, cues=False)
    for name in CUES:
        cue = getattr(base, name)
        assert np.array_equal(cue[:, 0], cue[:, 1])
    assert np.array_equal(base.quality, pairs.quality)


def _implied_biases(pairs, b, noise):
    """Position and cue biases the teacher's model implies, computed from normal CDFs."""
    def probabilities(p):
        mu = (p.quality[:, 0] - p.quality[:, 1] + b["position"]
              + sum(b[c] * np.sign(getattr(p, c)[:, 0] - getattr(p, c)[:, 1]) for c in CUES))
        m = p.tie_margin
        return norm.sf((m - mu) / noise), norm.cdf((-m - mu) / noise)

    first, second = probabilities(pairs)
    first_s, second_s = probabilities(pairs.swap())
    implied = {"position": (first.sum() + first_s.sum())
               / (first + second + first_s + second_s).sum() - 0.5}
    for c in CUES:
        cue = getattr(pairs, c)
        differ = cue[:, 0] != cue[:, 1]
        larger_wins = np.where(cue[:, 0] > cue[:, 1], first, second)[differ]
        implied[c] = larger_wins.sum() / (first + second)[differ].sum() - 0.5
    return implied


def test_teacher_biases_match_its_parameters():
    pairs = make_world(30_000, seed=8, n_sources=2)
    b = {"position": 0.12, "length": 0.1, "format": 0.06, "provenance": -0.08}
    noise = 0.08
    v = biased_teacher(pairs, seed=1, noise=noise, **b)
    v_swapped = biased_teacher(pairs.swap(), seed=2, noise=noise, **b)
    implied = _implied_biases(pairs, b, noise)
    measured = {"position": position_bias(v, v_swapped)}
    measured.update({c: cue_bias(v, getattr(pairs, c)) for c in CUES})
    for name, value in measured.items():
        n = 2 * len(pairs) if name == "position" else len(pairs)
        se = 0.5 / np.sqrt(0.5 * n)                # at least half the verdicts count
        assert value == pytest.approx(implied[name], abs=4 * se), name
        assert np.sign(implied[name]) == np.sign(b[name]) and abs(implied[name]) > 6 * se
    fair = biased_teacher(pairs, position=0, length=0, noise=noise)
    fair_s = biased_teacher(pairs.swap(), seed=2, position=0, length=0, noise=noise)
    assert abs(position_bias(fair, fair_s)) < 4 * 0.5 / np.sqrt(len(pairs))


def test_default_teacher_is_competent_and_leans_on_near_ties():
    pairs = make_world(5000, seed=9)
    v = biased_teacher(pairs)
    gap = pairs.quality[:, 0] - pairs.quality[:, 1]
    clear = np.abs(gap) >= 0.59                   # three quality steps or more
    assert np.mean(v[clear] == pairs.label[clear]) > 0.99
    near = np.abs(gap) < 0.01
    assert np.mean(v[near] == 0) > 0.5            # equal quality: mostly "first"
    # noiseless and one-sided by hand: equal quality, first shown longer -> 0.3 > 0.1, first
    quiet = biased_teacher(pairs, noise=0.0)
    longer_first = near & (pairs.length[:, 0] > pairs.length[:, 1])
    assert (quiet[longer_first] == 0).all()
    shorter_first = near & (pairs.length[:, 0] < pairs.length[:, 1])
    assert (quiet[shorter_first] == 2).all()      # 0.15 - 0.15 = 0: within the margin


def test_teacher_scores():
    pairs = make_world(300, seed=10)
    oracle = teacher_scores(pairs)
    assert np.array_equal(oracle, np.rint(1 + 9 * pairs.quality))
    padded = teacher_scores(pairs, length=2.0, noise=1.0)
    assert padded.min() >= 1 and padded.max() <= 10


@pytest.mark.parametrize(("call", "name"), [
    (lambda: make_world(0), "n_pairs"),
    (lambda: make_world(5, tie_margin=-1), "tie_margin"),
    (lambda: make_world(5).with_cues(length=np.zeros((4, 2))), "length"),
    (lambda: make_world(5).with_cues(format=np.full((5, 2), 2)), "format"),
    (lambda: biased_teacher(make_world(5), noise=-1), "noise"),
])
def test_bad_input_is_one_line_naming_the_argument(call, name):
    with pytest.raises(ValueError) as error:
        call()
    message = str(error.value)
    assert message.startswith(name) and "\n" not in message
