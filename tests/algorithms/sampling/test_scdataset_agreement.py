"""Agreement with the scdataset package (0.3.0), the paper's own code.

Documented relation (raystudy.algorithms.sampling.plan): with world_size 1 the
minibatches are identical; with world_size > 1 each rank's fetches hold the
same rows, while the package shuffles a rank's fetches with a rank-local random
stream and we reuse the world_size 1 shuffle of each fetch.
"""

import numpy as np
import pytest
import scdataset

from raystudy.algorithms.sampling import (
    BlockShuffling,
    BlockWeightedSampling,
    ClassBalancedSampling,
    Streaming,
    plan_fetches,
)

N = 1000
LABELS = np.random.default_rng(0).integers(0, 4, N) ** 2
WEIGHTS = np.random.default_rng(1).random(N)

CASES = {
    "streaming": (lambda: Streaming(), lambda: scdataset.Streaming()),
    "streaming_shuffle": (
        lambda: Streaming(shuffle=True),
        lambda: scdataset.Streaming(shuffle=True),
    ),
    "block16": (lambda: BlockShuffling(16), lambda: scdataset.BlockShuffling(block_size=16)),
    "block7_drop": (
        lambda: BlockShuffling(7, drop_last=True),
        lambda: scdataset.BlockShuffling(block_size=7, drop_last=True),
    ),
    "block3_subset": (
        lambda: BlockShuffling(3, indices=np.arange(5, N, 3)),
        lambda: scdataset.BlockShuffling(block_size=3, indices=np.arange(5, N, 3)),
    ),
    "weighted_replace": (
        lambda: BlockWeightedSampling(4, weights=WEIGHTS, total_size=700),
        lambda: scdataset.BlockWeightedSampling(block_size=4, weights=WEIGHTS, total_size=700),
    ),
    "weighted_rounds": (
        lambda: BlockWeightedSampling(
            4, weights=WEIGHTS, total_size=900, replace=False, sampling_size=300
        ),
        lambda: scdataset.BlockWeightedSampling(
            block_size=4, weights=WEIGHTS, total_size=900, replace=False, sampling_size=300
        ),
    ),
    "balanced": (
        lambda: ClassBalancedSampling(LABELS, block_size=8, total_size=640),
        lambda: scdataset.ClassBalancedSampling(LABELS, block_size=8, total_size=640),
    ),
}


def package_batches(strategy, epochs, batch_size, fetch_factor, seed, rank=0, world_size=1):
    data = np.arange(N)
    ds = scdataset.scDataset(
        data, strategy, batch_size, fetch_factor, seed=seed, rank=rank, world_size=world_size
    )
    return [[b.tolist() for b in ds] for _ in range(epochs)]


def our_batches(strategy, epoch, batch_size, fetch_factor, seed, rank=0, world_size=1):
    fetches = plan_fetches(strategy, N, batch_size, fetch_factor, seed, epoch, rank, world_size)
    return [b.tolist() for f in fetches for b in f.batch_rows]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(("batch_size", "fetch_factor"), [(64, 4), (10, 1), (32, 100)])
def test_same_minibatches_single_rank(case, batch_size, fetch_factor):
    ours, theirs = CASES[case]
    expected = package_batches(theirs(), 2, batch_size, fetch_factor, seed=11)
    for epoch in range(2):
        assert our_batches(ours(), epoch, batch_size, fetch_factor, seed=11) == expected[epoch]


@pytest.mark.parametrize("case", ["block16", "streaming_shuffle", "weighted_replace"])
def test_multi_rank_same_fetch_rows_documented_shuffle(case):
    ours, theirs = CASES[case]
    batch_size, fetch_factor, world_size = 16, 2, 3
    single = plan_fetches(ours(), N, batch_size, fetch_factor, 5, 0)
    some_differ = False
    for rank in range(world_size):
        theirs_rank = package_batches(theirs(), 1, batch_size, fetch_factor, 5, rank, world_size)[0]
        ours_rank = plan_fetches(ours(), N, batch_size, fetch_factor, 5, 0, rank, world_size)
        per_fetch = [
            theirs_rank[i : i + fetch_factor] for i in range(0, len(theirs_rank), fetch_factor)
        ]
        assert len(per_fetch) == len(ours_rank)
        for fetch, package_fetch in zip(ours_rank, per_fetch, strict=True):
            assert sorted(sum(package_fetch, [])) == fetch.rows.tolist()
            same_as_single = single[fetch.index].batch_rows
            assert [b.tolist() for b in fetch.batch_rows] == [b.tolist() for b in same_as_single]
            some_differ |= [b.tolist() for b in fetch.batch_rows] != package_fetch
    assert some_differ
