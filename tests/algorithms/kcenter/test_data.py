"""Generators (aspect ratio by scipy's pdist) and streams (replayed against a live set)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist, pdist

from raystudy.algorithms.kcenter import generate, offline_greedy, stream


def log10_delta(X):
    D = pdist(X)
    return float(np.log10(D.max() / D.min()))


def test_twins_realise_delta_within_half_a_decade_for_a_in_3_to_12():
    for a in (3, 5, 8, 12):
        X = generate("twins", 800, k=5, z=20, log10_delta=a, seed=4)
        assert X.shape == (800, 2)
        assert abs(log10_delta(X) - a) < 0.5
        assert abs(log10_delta(X) - a) < 0.01           # the construction's own precision
    low = generate("twins", 800, k=5, z=20, log10_delta=1, seed=4)   # below the base's floor
    assert 2.0 < log10_delta(low) < 3.0


def test_twins_are_one_instance_plus_partners_right_after_their_twins():
    n, m = 700, 7
    Xs = {a: generate("twins", n, k=4, z=10, log10_delta=a, seed=1) for a in (3, 12)}
    moved = np.flatnonzero((Xs[3] != Xs[12]).any(axis=1))
    assert moved.size == m                               # only the partners move
    for a, X in Xs.items():
        gap = np.linalg.norm(X[moved] - X[moved - 1], axis=1)   # partner - twin
        np.testing.assert_allclose(gap, pdist(X).max() / 10.0 ** a, rtol=1e-3)
        third = cdist(X[moved], np.delete(X, [*moved, *(moved - 1)], axis=0)).min(axis=1)
        assert (third > gap).all()                       # the pair is the closest pair
    # OPT barely moves: the offline radius changes by well under 10 % across Delta
    r3, r12 = (offline_greedy(Xs[a], 4, 10).radius for a in (3, 12))
    assert abs(r12 - r3) <= 0.1 * r3


def test_far_outliers_push_delta_up_from_the_top():
    for a in (6, 12):
        X = generate("far_outliers", 400, k=3, z=8, log10_delta=a, seed=2)
        assert abs(log10_delta(X) - a) < 0.01
        radius = np.linalg.norm(X - np.median(X, axis=0), axis=1)
        assert np.sum(radius > 10.0 ** (a - 1)) == 8     # exactly z points are far away


def test_blobs_are_seeded_and_their_outliers_decide_the_radius():
    X = generate("blobs", 300, d=3, k=3, z=10, seed=5)
    assert X.shape == (300, 3) and np.isfinite(X).all()
    np.testing.assert_array_equal(X, generate("blobs", 300, d=3, k=3, z=10, seed=5))
    assert not np.array_equal(X, generate("blobs", 300, d=3, k=3, z=10, seed=6))
    assert offline_greedy(X, 3, 10).radius < 0.5 * offline_greedy(X, 3, 0).radius


def test_file_reads_a_local_csv_in_time_order(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("x,timestamp,y\n1.5,30,2\n-1,10,0.25\n3,20,4\n7,40,8\n")
    X = generate("file", 3, path=path)
    np.testing.assert_array_equal(X, [[-1.0, 0.25], [3.0, 4.0], [1.5, 2.0]])
    bare = tmp_path / "bare.csv"
    bare.write_text("0,1,2\n3,4,5\n")
    np.testing.assert_array_equal(generate("file", 2, path=bare), [[0, 1, 2], [3, 4, 5]])


@pytest.mark.parametrize(("text", "n", "message"), [
    (None, 1, "cannot read"),
    ("a,b\n1,x\n", 1, "line 2: a non-numeric cell"),
    ("1,2\n3\n", 1, "line 2: 1 columns, expected 2"),
    ("1,2\nnan,3\n", 1, "line 2: a NaN or infinite value"),
    ("1,2\n", 2, "fewer than n = 2"),
    ("", 1, "holds no rows"),
])
def test_an_unreadable_csv_is_one_line(tmp_path, text, n, message):
    path = tmp_path / "data.csv"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ValueError) as err:
        generate("file", n, path=path)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"kind": "moons", "n": 50}, "kind must be one of"),
    ({"kind": "blobs", "n": 20}, r"n must be an integer >= z \+ k"),
    ({"kind": "twins", "n": 100}, "needs log10_delta"),
    ({"kind": "blobs", "n": 100, "log10_delta": 3}, "not to blobs"),
    ({"kind": "twins", "n": 100, "log10_delta": 15}, "log10_delta must lie in"),
    ({"kind": "file", "n": 10}, "needs path="),
])
def test_bad_generator_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        generate(**kwargs)


def test_sliding_window_stream():
    ops = stream(np.zeros((30, 2)), "sliding_window", window=10, n_updates=8)
    assert ops[:10] == [("insert", r) for r in range(10)]
    assert ops[10:] == [("insert", 10), ("delete", 0), ("insert", 11), ("delete", 1),
                        ("insert", 12), ("delete", 2), ("insert", 13), ("delete", 3)]
    with pytest.raises(ValueError, match="needs window"):
        stream(np.zeros((13, 2)), "sliding_window", window=10, n_updates=8)


def test_random_stream_only_inserts_idle_rows_and_deletes_live_ones():
    ops = stream(np.zeros((100, 2)), "random", window=40, n_updates=500, seed=3)
    assert ops == stream(np.zeros((100, 2)), "random", window=40, n_updates=500, seed=3)
    assert len(ops) == 540
    live: set[int] = set()
    sizes = []
    for op, row in ops:
        if op == "insert":
            assert row not in live and 0 <= row < 100
            live.add(row)
        else:
            assert op == "delete" and row in live
            live.remove(row)
        sizes.append(len(live))
    assert min(sizes[40:]) >= 20 and max(sizes) <= 60
    assert {op for op, _ in ops[40:]} == {"insert", "delete"}


def test_delete_centers_stream_alternates_adaptive_deletions_and_inserts():
    ops = stream(np.zeros((20, 2)), "delete_centers", window=10, n_updates=4)
    assert ops[10:] == [("delete_center", -1), ("insert", 10), ("delete_center", -1),
                        ("insert", 11)]
    with pytest.raises(ValueError, match="kind must be one of"):
        stream(np.zeros((20, 2)), "bursty", window=10, n_updates=4)
