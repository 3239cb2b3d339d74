"""LayeredSampling (raystudy's reconstruction): its invariants, its cost and its symmetries."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from raystudy.algorithms.kcenter import LayeredSampling, generate, stream
from raystudy.algorithms.kcenter.layered import KNOBS

from ._reference import replay


def drive(structure, points, updates, every=20, scale=1.0):
    answers = []
    replay(structure, points * scale, updates, every, lambda sol, live: answers.append(sol))
    return answers


def test_is_labelled_as_raystudys_reconstruction():
    assert LayeredSampling.algorithm == "layered_reconstructed"
    assert "raystudy's reconstruction" in LayeredSampling.__doc__
    assert "not the authors' algorithm" in LayeredSampling.__doc__.replace("\n   ", "")


def test_cost_in_distance_evaluations_does_not_depend_on_delta():
    ops = []
    for a in (3, 12):                                    # the same instance, Delta 1e3 vs 1e12
        X = generate("twins", 600, k=4, z=6, log10_delta=a, seed=0)
        structure = LayeredSampling(4, 6, seed=0)
        drive(structure, X, stream(X, "sliding_window", window=300, n_updates=300, seed=0), 50)
        assert structure.builds >= 2 and structure.n_layers >= 1
        ops.append(structure.ops)
    assert ops[1] == pytest.approx(ops[0], rel=0.01)


def test_scale_invariance_same_centers_for_coordinates_times_a_million():
    X = generate("blobs", 400, k=4, z=6, seed=0)
    updates = stream(X, "random", window=200, n_updates=200, seed=0)
    small, big = LayeredSampling(4, 6, seed=1), LayeredSampling(4, 6, seed=1)
    a, b = drive(small, X, updates), drive(big, X, updates, scale=1e6)
    assert small.builds >= 2
    assert [s.centers for s in a] == [s.centers for s in b]
    assert [s.outliers for s in a] == [s.outliers for s in b]
    assert np.allclose([s.radius * 1e6 for s in a], [s.radius for s in b], rtol=1e-12)
    assert small.ops == big.ops


def test_below_tau_everything_is_exact_and_the_cost_is_a_closed_form():
    # k=2, z=4: s = ceil(8 ln 20) = 24 = tau; 20 points stay in U (no layer), W = all points
    X = np.random.default_rng(0).normal(size=(21, 2))
    structure = LayeredSampling(2, 4, eps=0.5, seed=0, delay=0)
    assert structure.s == 24 and structure.tau == 24
    ids = [structure.insert(p) for p in X[:20]]
    assert structure.ops == 0 and structure.n_layers == 0
    first = structure.query()
    c = len(first.centers)
    assert structure.ops == 20 * 19 // 2 + 20 * c        # the pairs of W, then the radius
    structure.query()                                    # W unchanged: only the radius again
    assert structure.ops == 20 * 19 // 2 + 2 * 20 * c
    structure.delete(ids[0])
    structure.insert(X[20])
    before = structure.ops
    third = structure.query()
    assert structure.ops - before == 19 + 20 * len(third.centers)   # one new row of W


def test_delayed_insertions_cost_nothing_until_the_batch_is_placed():
    X = generate("blobs", 600, k=3, z=20, seed=2)
    structure = LayeredSampling(3, 20, eps=0.5, seed=0)  # delay = ceil(0.5 * 20 / 2) = 5
    assert structure.delay == 5 and structure.budget == 30 and structure.tau == 120
    rows = iter(X)
    for _ in range(500):
        structure.insert(next(rows))
    while structure._buffer:                             # start from an empty buffer
        structure.insert(next(rows))
    assert structure.n_layers >= 1
    before = structure.ops
    waiting = [structure.insert(next(rows)) for _ in range(4)]
    assert structure.ops == before                       # four wait in the buffer
    structure.delete(waiting[0])                         # a buffered point leaves for free
    assert structure.ops == before
    sol = structure.query()
    assert not set(waiting) & set(sol.centers)           # buffered points are never centers
    assert len(sol.outliers) <= 30
    after_query = structure.ops
    structure.insert(next(rows))
    assert structure.ops == after_query                  # still four waiting
    structure.insert(next(rows))                         # the fifth: the batch is placed
    assert structure.ops >= after_query + 5 * structure.s   # each meets the first sample
    assert not structure._buffer


def test_every_member_is_within_two_layer_radii_of_its_live_representative():
    X = generate("twins", 500, k=4, z=6, log10_delta=4, seed=1)
    structure = LayeredSampling(4, 6, seed=3, sample_size=10)
    live: dict[int, int] = {}

    def check(sol, rows):
        live.clear()
        live.update(rows)

    replay(structure, X, stream(X, "delete_centers", window=250, n_updates=120, seed=0), 40,
           check)
    assert structure.n_layers >= 2
    placed = 0
    for S_X, r_l, g0 in structure._layers:
        for g in range(g0, g0 + S_X.shape[0]):
            members = list(structure._members[g])
            assert structure._weight[g] == len(members)
            if members:
                rep = int(structure._rep[g])
                assert rep in members and rep in live
                d_rep = cdist(X[[live[m] for m in members]], X[[live[rep]]])[:, 0]
                d_ghost = cdist(X[[live[m] for m in members]], S_X[[g - g0]])[:, 0]
                assert (d_ghost <= r_l * (1 + 1e-12)).all()
                assert (d_rep <= 2 * r_l * (1 + 1e-12)).all()
                placed += len(members)
    ids, weights = structure.summary()
    assert placed + len(structure._U) + len(structure._buffer) == len(structure) == len(live)
    assert weights.sum() + len(structure._buffer) == len(structure)
    assert set(ids.tolist()) <= set(live)


def test_knobs_are_checked():
    with pytest.raises(ValueError) as err:
        LayeredSampling(2, 4, samples=3)
    assert "unknown knob(s) ['samples']" in str(err.value)
    assert all(name in str(err.value) for name in KNOBS)
    with pytest.raises(ValueError, match=r"delay must lie in \[0, floor"):
        LayeredSampling(2, 4, eps=0.5, delay=3)          # slack floor(6) - 4 = 2
    with pytest.raises(ValueError, match="beta must lie in"):
        LayeredSampling(2, 4, beta=1.0)
    with pytest.raises(ValueError, match="eps must be > 0"):
        LayeredSampling(2, 4, eps=0)
    assert LayeredSampling(5, 20, sample_size=7, tau=9).tau == 9
