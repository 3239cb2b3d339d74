"""Properties of plan_fetches: determinism, epochs, ranks, minibatch cuts."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raystudy.algorithms.sampling import (
    BlockShuffling,
    BlockWeightedSampling,
    ClassBalancedSampling,
    Streaming,
    epoch_seed,
    plan_fetches,
)


def make_strategy(kind: str, block_size: int, n_rows: int):
    if kind == "streaming":
        return Streaming()
    if kind == "streaming_shuffle":
        return Streaming(shuffle=True)
    if kind == "block":
        return BlockShuffling(block_size)
    if kind == "weighted":
        return BlockWeightedSampling(
            block_size, weights=np.arange(1, n_rows + 1), total_size=n_rows
        )
    return ClassBalancedSampling(np.arange(n_rows) % 3, block_size)


KINDS = ["streaming", "streaming_shuffle", "block", "weighted", "balanced"]
plans = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(KINDS),
        "n_rows": st.integers(1, 300),
        "block_size": st.integers(1, 9),
        "batch_size": st.integers(1, 9),
        "fetch_factor": st.integers(1, 5),
        "seed": st.integers(0, 2**31),
        "epoch": st.integers(0, 5),
    }
)


def run(p, rank=0, world_size=1, drop_last=False, **change):
    p = {**p, **change}
    strategy = make_strategy(p["kind"], p["block_size"], p["n_rows"])
    return plan_fetches(
        strategy,
        p["n_rows"],
        p["batch_size"],
        p["fetch_factor"],
        p["seed"],
        p["epoch"],
        rank=rank,
        world_size=world_size,
        drop_last=drop_last,
    )


def as_tuples(fetches):
    return [(f.index, f.rows.tolist(), [b.tolist() for b in f.batches]) for f in fetches]


@settings(max_examples=60, deadline=None)
@given(plans)
def test_deterministic_per_seed_and_epoch(p):
    assert as_tuples(run(p)) == as_tuples(run(p))


@settings(max_examples=60, deadline=None)
@given(plans)
def test_fetches_sorted_and_batches_partition_each_fetch(p):
    fetches = run(p)
    fetch_size = p["batch_size"] * p["fetch_factor"]
    assert [f.index for f in fetches] == list(range(len(fetches)))
    for f in fetches:
        assert len(f.rows) <= fetch_size
        assert np.all(np.diff(f.rows) >= 0)
        cut = np.concatenate(f.batches)
        assert sorted(cut.tolist()) == list(range(len(f.rows)))
        assert all(len(b) == p["batch_size"] for b in f.batches[:-1])


@settings(max_examples=60, deadline=None)
@given(plans, st.integers(1, 5))
def test_ranks_are_disjoint_and_cover_the_epoch(p, world_size):
    whole = as_tuples(run(p))
    per_rank = [run(p, rank=r, world_size=world_size) for r in range(world_size)]
    for r, fetches in enumerate(per_rank):
        assert all(f.index % world_size == r for f in fetches)
    merged = sorted((t for fetches in per_rank for t in as_tuples(fetches)), key=lambda t: t[0])
    assert merged == whole


@settings(max_examples=40, deadline=None)
@given(plans)
def test_unweighted_epoch_visits_every_row_once(p):
    if p["kind"] in ("weighted", "balanced"):
        p = {**p, "kind": "block"}
    rows = np.concatenate([f.rows for f in run(p)])
    assert np.array_equal(np.sort(rows), np.arange(p["n_rows"]))


@settings(max_examples=40, deadline=None)
@given(plans, st.integers(1, 3))
def test_drop_last_keeps_only_full_minibatches(p, world_size):
    for r in range(world_size):
        for f in run(p, rank=r, world_size=world_size, drop_last=True):
            assert all(len(b) == p["batch_size"] for b in f.batches)


@pytest.mark.parametrize("kind", ["streaming_shuffle", "block", "weighted", "balanced"])
def test_epochs_differ(kind):
    p = dict(kind=kind, n_rows=500, block_size=4, batch_size=8, fetch_factor=4, seed=3, epoch=0)
    first = [b.tolist() for f in run(p) for b in f.batch_rows]
    second = [b.tolist() for f in run(p, epoch=1) for b in f.batch_rows]
    assert first != second


def test_streaming_is_file_order():
    fetches = plan_fetches(Streaming(), 10, batch_size=3, fetch_factor=2, seed=0, epoch=0)
    assert [b.tolist() for f in fetches for b in f.batch_rows] == [
        [0, 1, 2],
        [3, 4, 5],
        [6, 7, 8],
        [9],
    ]


def test_block_shuffling_keeps_blocks_contiguous():
    order = BlockShuffling(4).order(22, seed=1)
    where = {row: i for i, row in enumerate(order.tolist())}
    for start in range(0, 20, 4):
        assert order[where[start] : where[start] + 4].tolist() == list(range(start, start + 4))
    assert order[where[20] : where[20] + 2].tolist() == [20, 21]
    assert sorted(order.tolist()) == list(range(22))
    assert len(BlockShuffling(4, drop_last=True).order(22, seed=1)) == 20


def test_subset_indices_and_class_balance():
    idx = np.arange(0, 100, 2)
    assert set(BlockShuffling(3, indices=idx).order(100, 0).tolist()) == set(idx.tolist())
    labels = np.r_[np.zeros(900, int), np.ones(100, int)]
    drawn = ClassBalancedSampling(labels, block_size=1, total_size=20000).order(1000, 0)
    assert abs(labels[drawn].mean() - 0.5) < 0.02


def test_epoch_seed_and_bad_arguments():
    assert epoch_seed(7, 2) == 2007
    with pytest.raises(ValueError):
        plan_fetches(Streaming(), 10, 0, 1, 0, 0)
    with pytest.raises(ValueError):
        plan_fetches(Streaming(), 10, 2, 1, 0, 0, rank=2, world_size=2)
    with pytest.raises(ValueError):
        BlockShuffling(0)
