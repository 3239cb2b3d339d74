"""Every dynamic structure, after random, sliding-window and center-deleting streams,
against a from-scratch recomputation with scipy.spatial.distance.cdist."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from raystudy.algorithms.kcenter import (
    LayeredSampling,
    OfflineRecompute,
    RadiusGuessing,
    generate,
    offline_greedy,
    stream,
)

from ._reference import radius_of, replay

K, Z, EPS = 4, 6, 0.5
B = 9                                           # floor((1 + 0.5) * 6)
POINTS = generate("twins", 420, k=K, z=Z, log10_delta=6, seed=3)
D_MIN, D_MAX = pdist(POINTS).min(), pdist(POINTS).max()


def make(name, seed=0):
    if name == "layered":
        return LayeredSampling(K, Z, EPS, seed=seed, sample_size=12)
    if name == "radius_guess":
        return RadiusGuessing(K, Z, EPS, d_min=D_MIN, d_max=D_MAX, seed=seed)
    return OfflineRecompute(K, Z, EPS)


# quality bound against the offline greedy on the same snapshot: the reconstruction's
# K4 target (2); CLSW's guarantee is 14 + eps times OPT, and OPT <= the greedy's radius
RATIO = {"layered": 2.0, "radius_guess": 15.0, "offline": 1.0}


@pytest.mark.parametrize("kind", ["random", "sliding_window", "delete_centers"])
@pytest.mark.parametrize("name", ["layered", "radius_guess", "offline"])
def test_answers_match_a_recomputation_from_scratch(name, kind):
    structure = make(name)
    updates = stream(POINTS, kind, window=200, n_updates=200, seed=1)
    seen = {"queries": 0, "ops": 0}

    def check(sol, live):
        ids = np.array(sorted(live))
        rows = np.array([live[i] for i in ids])
        assert len(structure) == len(ids)
        assert set(sol.centers) <= set(live)             # never a deleted point
        assert 1 <= len(sol.centers) <= K and len(set(sol.centers)) == len(sol.centers)
        r, beyond = radius_of(POINTS[rows], POINTS[[live[c] for c in sol.centers]], B)
        assert sol.radius == pytest.approx(r, rel=1e-12, abs=1e-300)
        assert sol.outliers == tuple(ids[beyond]) and len(sol.outliers) <= B
        greedy = offline_greedy(POINTS[rows], K, B if name == "offline" else Z)
        assert sol.radius <= RATIO[name] * greedy.radius * (1 + 1e-12)
        assert structure.ops >= seen["ops"]
        seen["queries"] += 1
        seen["ops"] = structure.ops

    replay(structure, POINTS, updates, 25, check)
    assert seen["queries"] >= 16 and structure.ops > 0


@pytest.mark.parametrize("name", ["layered", "radius_guess"])
def test_a_pickled_structure_resumes_bit_identically(name):
    updates = stream(POINTS, "random", window=150, n_updates=150, seed=2)
    first, rest = updates[:200], updates[200:]
    original = make(name, seed=7)
    ids: dict[int, int] = {}
    for op, row in first:
        if op == "insert":
            ids[row] = original.insert(POINTS[row])
        else:
            original.delete(ids.pop(row))
    copy = pickle.loads(pickle.dumps(original))
    runs = []
    for structure in (original, copy):
        rows, answers = dict(ids), []
        for op, row in rest:
            if op == "insert":
                rows[row] = structure.insert(POINTS[row])
            else:
                structure.delete(rows.pop(row))
            answers.append(structure.query())
        runs.append((answers, structure.ops))
    assert runs[0] == runs[1]                            # centers, radius bits, outliers, ops


@pytest.mark.parametrize("name", ["layered", "radius_guess", "offline"])
def test_bad_updates_raise_one_line(name):
    structure = make(name)
    i = structure.insert([0.0, 0.0])
    for bad, message in (([np.nan, 0.0], "finite"), ([1.0, 2.0, 3.0], "d = 3"),
                         ([[1.0, 2.0]], "(d,) vector")):
        with pytest.raises(ValueError) as err:
            structure.insert(bad)
        assert message in str(err.value) and "\n" not in str(err.value)
    structure.delete(i)
    for gone in (i, 5, -1):
        with pytest.raises(KeyError, match="not a live point"):
            structure.delete(gone)
    assert len(structure) == 0


@pytest.mark.parametrize("cls", [LayeredSampling, OfflineRecompute])
def test_constructor_checks(cls):
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        cls(0, 1)
    with pytest.raises(ValueError, match="z must be an integer >= 0"):
        cls(1, -2)
    with pytest.raises(ValueError, match="eps"):
        cls(1, 1, float("nan"))


@pytest.mark.parametrize("name", ["layered", "radius_guess", "offline"])
def test_two_points_a_nanometre_apart_at_a_thousand(name):
    structure = {"layered": lambda: LayeredSampling(1, 0, EPS),
                 "radius_guess": lambda: RadiusGuessing(1, 0, EPS, d_min=1e-9, d_max=1e-9),
                 "offline": lambda: OfflineRecompute(1, 0, EPS)}[name]()
    structure.insert([1e3, 1e3])
    structure.insert([1e3 + 1e-9, 1e3])
    assert structure.query().radius == pytest.approx(1e-9, abs=1e-12)
