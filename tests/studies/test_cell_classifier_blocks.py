"""BlockSampledDatasource: plan order, CSR/dense round trip, split across consumers."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from raystudy.algorithms.sampling import (
    BlockShuffling,
    H5ADCollection,
    Streaming,
    make_anndata_collection,
    plan_fetches,
)
from raystudy.studies.cell_classifier.blocks import (
    BlockSampledDatasource,
    iter_minibatches,
    read_block_sampled,
    table_to_minibatches,
)

B, F, SEED = 16, 4, 3


@pytest.fixture(scope="module")
def coll(tmp_path_factory) -> H5ADCollection:
    out = tmp_path_factory.mktemp("plates")
    paths = make_anndata_collection(out, 1000, 30, 3, 0.2, progress=False, cell_lines=4)
    return H5ADCollection(paths, obs_columns=["plate", "cell_line"])


def planned(coll: H5ADCollection, strategy, epochs: int = 1) -> list[np.ndarray]:
    return [rows for e in range(epochs)
            for f in plan_fetches(strategy, coll.n_rows, B, F, SEED, e) for rows in f.batch_rows]


@pytest.mark.parametrize("output", ["csr", "dense"])
@pytest.mark.parametrize("n_tasks", [1, 3, 100])
def test_read_tasks_follow_the_plan(coll, output, n_tasks):
    src = BlockSampledDatasource(coll, BlockShuffling(4), B, F, SEED, epochs=2, output=output)
    tasks = src.get_read_tasks(n_tasks)
    assert len(tasks) == min(n_tasks, len(src.fetches))
    expected = planned(coll, BlockShuffling(4), epochs=2)
    assert sum(t.metadata.num_rows for t in tasks) == len(expected)
    got = [mb for t in tasks for block in t() for mb in table_to_minibatches(block, coll.n_cols)]
    assert [len(g) for g in got] == [len(e) for e in expected]
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g.rows, e)
        ref = coll.read(np.sort(e), "dense")
        order = np.argsort(e, kind="stable")
        x = g.X.toarray() if output == "csr" else g.X
        np.testing.assert_allclose(x[order], ref.X)
        np.testing.assert_array_equal(g.obs["plate"][order], ref.obs["plate"])


def test_rank_planning_matches_plan_fetches(coll):
    for rank in range(3):
        src = BlockSampledDatasource(coll, BlockShuffling(8), B, F, SEED, rank=rank, world_size=3)
        ours = [rows for f in src.fetches for rows in f.batch_rows]
        theirs = [rows for f in plan_fetches(BlockShuffling(8), coll.n_rows, B, F, SEED, 0, rank, 3)
                  for rows in f.batch_rows]
        assert all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True))


def test_bad_output_is_rejected(coll):
    with pytest.raises(ValueError, match="output"):
        BlockSampledDatasource(coll, Streaming(), B, output="coo")


def test_dataset_keeps_minibatches_in_plan_order(ray_session, coll):
    import ray

    ctx = ray.data.DataContext.get_current()
    previous, ctx.execution_options.preserve_order = ctx.execution_options.preserve_order, True
    try:
        ds = read_block_sampled(BlockSampledDatasource(coll, BlockShuffling(4), B, F, SEED))
        got = [mb.rows for mb in iter_minibatches(ds, coll.n_cols)]
    finally:
        ctx.execution_options.preserve_order = previous
    expected = planned(coll, BlockShuffling(4))
    assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))


@pytest.mark.parametrize("n_workers", [2, 3])
def test_train_split_is_disjoint_and_covers_the_epoch(ray_session, coll, n_workers):
    """What ray.train.get_dataset_shard does: streaming_split(N, equal=True), consumed at once."""
    ds = read_block_sampled(BlockSampledDatasource(coll, BlockShuffling(4), B, F, SEED))
    shards = ds.streaming_split(n_workers, equal=True)
    seen: list[list] = [[] for _ in shards]

    def consume(i: int) -> None:
        seen[i] = list(iter_minibatches(shards[i], coll.n_cols))

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(n_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    expected = {tuple(b) for b in planned(coll, BlockShuffling(4))}
    got = [tuple(mb.rows) for s in seen for mb in s]
    assert len(set(got)) == len(got)  # no minibatch twice
    assert set(got) <= expected  # each one whole, as planned
    assert len(expected) - len(got) < n_workers  # equal=True drops < N minibatches
    assert len({len(s) for s in seen}) == 1  # equal shards
    everything = np.concatenate([np.array(mb) for mb in got])
    assert len(np.unique(everything)) == len(everything)  # disjoint cells
