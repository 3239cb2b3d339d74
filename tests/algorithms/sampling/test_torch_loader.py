"""BlockSampledDataset: the planned minibatches through a plain torch DataLoader."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from raystudy.algorithms.sampling import (
    BlockShuffling,
    H5ADCollection,
    make_anndata_collection,
    plan_fetches,
)
from raystudy.algorithms.sampling.torch_loader import BlockSampledDataset, rows_to_tensors

B, F, SEED = 8, 4, 5


@pytest.fixture(scope="module")
def coll(tmp_path_factory) -> H5ADCollection:
    out = tmp_path_factory.mktemp("plates")
    paths = make_anndata_collection(out, 600, 20, 3, 0.2, progress=False, cell_lines=4)
    return H5ADCollection(paths, obs_columns=["plate", "cell_line"])


def planned(coll, epoch: int = 0, rank: int = 0, world: int = 1) -> list[np.ndarray]:
    fetches = plan_fetches(BlockShuffling(4), coll.n_rows, B, F, SEED, epoch, rank, world)
    return [rows for f in fetches for rows in f.batch_rows]


def test_single_process_yields_the_plan_with_tensors(coll):
    ds = BlockSampledDataset(coll, BlockShuffling(4), B, F, SEED)
    got = list(DataLoader(ds, batch_size=None))
    expected = planned(coll)
    assert len(got) == len(expected)
    for mb, rows in zip(got, expected, strict=True):
        np.testing.assert_array_equal(mb["row"].numpy(), rows)
        assert mb["X"].shape == (len(rows), coll.n_cols) and mb["X"].dtype == torch.float32
        assert mb["plate"].dtype == torch.int64
        np.testing.assert_array_equal(mb["plate"].numpy(), coll.obs["plate"][rows])
        ref = coll.read(np.sort(rows), "dense").X[np.argsort(np.argsort(rows, kind="stable"))]
        np.testing.assert_allclose(mb["X"].numpy(), ref)


def test_set_epoch_changes_the_order(coll):
    ds = BlockSampledDataset(coll, BlockShuffling(4), B, F, SEED)
    ds.set_epoch(1)
    got = [mb["row"].numpy() for mb in ds]
    assert all(np.array_equal(a, b) for a, b in zip(got, planned(coll, 1), strict=True))
    assert not np.array_equal(got[0], planned(coll, 0)[0])


def test_workers_and_ranks_are_disjoint_and_cover_the_epoch(coll):
    seen = []
    for rank in range(2):
        ds = BlockSampledDataset(coll, BlockShuffling(4), B, F, SEED, rank=rank, world_size=2)
        seen += [mb["row"].numpy() for mb in DataLoader(ds, batch_size=None, num_workers=2)]
    everything = np.concatenate(seen)
    assert len(everything) == coll.n_rows
    np.testing.assert_array_equal(np.sort(everything), np.arange(coll.n_rows))
    assert {tuple(m) for m in seen} == {tuple(m) for m in planned(coll)}  # same minibatches


def test_rows_to_tensors_log1p(coll):
    rows = coll.read(np.arange(5), "csr")
    out = rows_to_tensors(rows, log1p=True)
    np.testing.assert_allclose(out["X"].numpy(), np.log1p(rows.X.toarray()), rtol=1e-6)


def test_bad_sizes_are_rejected(coll):
    with pytest.raises(ValueError, match="batch_size"):
        BlockSampledDataset(coll, BlockShuffling(4), 0)
    with pytest.raises(ValueError, match="rank"):
        BlockSampledDataset(coll, BlockShuffling(4), B, rank=2, world_size=2)
