"""RadiusGuessing (CLSW-style levels): the aspect ratio enters its cost through the levels."""

from __future__ import annotations

import math

import pytest
from scipy.spatial.distance import pdist

from raystudy.algorithms.kcenter import RadiusGuessing, generate, stream

from ._reference import replay


def test_levels_and_the_cost_of_a_second_point_closed_form():
    # d_max / d_min = 1e6, ratio 2: L = 1 + ceil(log2 1e6) = 21; the second point meets the
    # first (the only center) once per level, whether it joins or re-clusters
    structure = RadiusGuessing(3, 1, eps=1.0, d_min=1e-3, d_max=1e3, seed=0)
    assert structure.levels == 21 == 1 + math.ceil(math.log2(1e6))
    assert structure.rho[0] == 2e-3 and structure.rho[-1] == pytest.approx(2e-3 * 2 ** 20)
    structure.insert([0.0, 0.0])
    assert structure.ops == 0
    structure.insert([1.0, 0.0])
    assert structure.ops == 21


def test_cost_grows_with_the_aspect_ratio():
    ops = []
    for a in (3, 12):
        X = generate("twins", 600, k=4, z=6, log10_delta=a, seed=0)
        D = pdist(X)
        structure = RadiusGuessing(4, 6, d_min=D.min(), d_max=D.max(), seed=0)
        replay(structure, X, stream(X, "sliding_window", window=300, n_updates=300, seed=0),
               50, lambda sol, live: None)
        ops.append((structure.levels, structure.ops))
    (l3, o3), (l12, o12) = ops
    assert l12 >= 3 * l3 - 3
    assert o12 >= 3 * o3                                 # ~log Delta levels, each paid


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"d_min": 0.0, "d_max": 1.0}, "d_min must be a positive"),
    ({"d_min": 2.0, "d_max": 1.0}, "must be >= d_min"),
    ({"d_min": 1.0, "d_max": float("inf")}, "d_max must be a positive finite"),
])
def test_bad_distances(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RadiusGuessing(2, 1, **kwargs)
    with pytest.raises(ValueError, match="eps must be > 0"):
        RadiusGuessing(2, 1, eps=0.0, d_min=1.0, d_max=2.0)
