"""Streams and partition measures: Theorem 3.1 as a property (hypothesis), the bound's zero
set, hand-worked F1 and recall, and DLA finding the change points of a clean stream."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from raystudy.algorithms.linear_attention import (
    boundary_f1,
    contributions,
    deviation_bound,
    dla_partition,
    needle_stream,
    piecewise_stream,
    realised_deviation,
    recall_best_state,
)

F64 = torch.float64


@settings(max_examples=25, deadline=None)
@given(T=st.integers(1, 12), D=st.integers(1, 4), seed=st.integers(0, 10_000),
       cuts=st.sets(st.integers(1, 11)))
def test_theorem_3_1_bounds_the_realised_deviation(T, D, seed, cuts):
    gen = torch.Generator().manual_seed(seed)
    U = torch.randn(T, D, generator=gen, dtype=F64)
    q = torch.randn(D, generator=gen, dtype=F64)
    g = 2 * torch.rand(T, generator=gen, dtype=F64) - 1     # |g_t| <= 1
    starts = torch.tensor([0, *sorted(c for c in cuts if c < T)])
    bound = deviation_bound(U, starts)
    assert realised_deviation(U, starts, q, g) <= float(q.norm()) * bound * (1 + 1e-9) + 1e-12
    assert realised_deviation(U, starts, q) == pytest.approx(0.0, abs=1e-9)  # g = 1 keeps sums


def test_bound_is_zero_exactly_when_every_block_is_constant():
    k, v, change_points = piecewise_stream([3, 4, 2], 4, 3, seed=1)
    U = contributions(k, v)
    aligned = torch.tensor([0, *change_points.tolist()])
    assert deviation_bound(U, aligned) == pytest.approx(0.0, abs=1e-12)
    assert deviation_bound(U, torch.tensor([0, 2, 7])) > 0.1   # blocks across change points
    # one block over a change point, by hand: sizes 3 + 4 of two orthogonal contributions
    u, w = U[0], U[3]
    mean = (3 * u + 4 * w) / 7
    by_hand = math.sqrt(7) * math.sqrt(3 * float((u - mean).square().sum())
                                        + 4 * float((w - mean).square().sum()))
    assert deviation_bound(U[:7], torch.tensor([0])) == pytest.approx(by_hand)


def test_piecewise_stream_structure():
    k, v, change_points = piecewise_stream([5, 3, 6], 6, 2, seed=3)
    assert k.shape == (14, 6) and v.shape == (14, 2) and k.dtype == F64
    assert change_points.tolist() == [5, 8]
    assert torch.allclose(k.norm(dim=-1), torch.ones(14, dtype=F64))
    assert abs(float(k[4] @ k[5])) < 1e-12 and abs(float(k[7] @ k[8])) < 1e-12
    assert torch.equal(k[0], k[4]) and torch.equal(v[5], v[7])
    noisy, _, _ = piecewise_stream([5, 3, 6], 6, 2, noise=0.1, seed=3)
    assert 0 < float((noisy - k).std()) < 0.2
    assert torch.equal(piecewise_stream([5, 3, 6], 6, 2, seed=3)[0], k)   # seeded


def test_dla_finds_the_change_points_of_a_clean_stream():
    k, v, change_points = piecewise_stream([6, 5, 7, 4], 8, 8, seed=0)
    p = dla_partition(k[None, None], v[None, None], tau=1.0, capacity=4, score="token_vs_state")
    opened = torch.nonzero(p.opened[0, 0]).flatten()
    assert boundary_f1(opened, change_points) == 1.0
    final = p.starts[0, 0, -1]
    assert final.tolist() == [0, *change_points.tolist()]
    assert deviation_bound(contributions(k, v), final) == pytest.approx(0.0, abs=1e-12)


def test_boundary_f1_by_hand():
    assert boundary_f1(torch.tensor([0, 5, 9]), torch.tensor([5, 10])) == pytest.approx(0.5)
    assert boundary_f1(torch.tensor([5, 9]), torch.tensor([5, 10]), tol=1) == 1.0
    # one predicted point may match one true point only: P = 1/3, R = 1/2
    assert boundary_f1(torch.tensor([4, 5, 6]), torch.tensor([5, 20]), tol=1) == pytest.approx(0.4)
    assert boundary_f1(torch.tensor([0]), torch.tensor([], dtype=torch.long)) == 1.0
    assert boundary_f1(torch.tensor([3]), torch.tensor([], dtype=torch.long)) == 0.0


def test_recall_best_state_by_hand():
    """Two orthonormal needles in their own blocks are recalled exactly; summed into one block
    with a third key on the same direction as needle 0, needle 0's answer is corrupted."""
    e = torch.eye(3, dtype=F64)
    k = torch.stack([e[0], e[1], e[2]])
    v = torch.stack([e[0], e[1], e[2]])
    needles = torch.tensor([0, 1])
    cos = recall_best_state(k, v, torch.tensor([0, 1, 2]), needles)
    assert torch.allclose(cos, torch.ones(2, dtype=F64))
    k2 = torch.stack([e[0], e[1], e[0]])
    cos = recall_best_state(k2, v, torch.tensor([0]), needles)   # one state: v0 + v2 for k0
    assert cos[0] == pytest.approx(1 / math.sqrt(2)) and cos[1] == pytest.approx(1.0)


def test_needle_stream_structure():
    k, v, needle_pos = needle_stream(4, 7, 8, 6, seed=2)
    assert k.shape == (32, 8) and v.shape == (32, 6)
    assert torch.equal(needle_pos // 8, torch.arange(4))       # one needle per segment
    filler = torch.ones(32, dtype=torch.bool)
    filler[needle_pos] = False
    theme = k[filler].mean(0)
    theme = theme / theme.norm()
    assert (k[filler] @ theme).min() > 0.7                     # filler near its theme
    assert (k[needle_pos] @ theme).abs().max() < 0.2           # needles away from it


def test_bad_input_raises_one_line():
    U = torch.zeros(4, 2, dtype=F64)
    cases = [
        (lambda: deviation_bound(U, torch.tensor([1, 2])), "starts"),
        (lambda: deviation_bound(U, torch.tensor([0, 2, 2])), "starts"),
        (lambda: realised_deviation(U, torch.tensor([0]), torch.zeros(3, dtype=F64)), "q"),
        (lambda: piecewise_stream([], 4, 4), "seg_lens"),
        (lambda: piecewise_stream([3], 4, 4, noise=-1), "noise"),
        (lambda: boundary_f1(torch.tensor([1]), torch.tensor([1]), tol=-1), "tol"),
        (lambda: needle_stream(0, 3, 4, 4), "n_needles"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError) as error:
            call()
        assert "\n" not in str(error.value) and str(error.value).startswith(name)
