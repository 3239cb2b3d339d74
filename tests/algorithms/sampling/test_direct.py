"""Direct slices of unfiltered HDF5 datasets, against h5py's own reads."""

import pickle

import h5py
import numpy as np
import pytest

from raystudy.algorithms.sampling import H5ADCollection, make_anndata_collection
from raystudy.algorithms.sampling.direct import DirectSlices, slice_reader
from raystudy.errors import DataError

LAYOUTS = {
    "contiguous 1-D": dict(data=np.arange(1000, dtype=np.float32)),
    "chunked 1-D, ragged last chunk": dict(data=np.arange(1000, dtype=np.int32), chunks=(96,)),
    "big-endian": dict(data=np.arange(500, dtype=">f8"), chunks=(64,)),
    "chunked 2-D, whole rows": dict(
        data=np.arange(300 * 7, dtype=np.float32).reshape(300, 7), chunks=(32, 7)
    ),
    "contiguous 2-D": dict(data=np.arange(50 * 3, dtype=np.int64).reshape(50, 3)),
}


@pytest.fixture(params=sorted(LAYOUTS))
def stored(request, tmp_path):
    path = tmp_path / "a.h5"
    spec = LAYOUTS[request.param]
    with h5py.File(path, "w") as f:
        f.create_dataset("a", **spec)
        f.create_dataset("after", data=np.ones(10))
    return path, spec["data"]


def test_random_slices_equal_h5py(stored):
    path, truth = stored
    with h5py.File(path) as f:
        direct = DirectSlices.of(f["a"], path)
        assert direct is not None
        rng = np.random.default_rng(0)
        n = len(truth)
        cases = [
            (0, n),
            (0, 1),
            (n - 1, n),
            *(sorted(rng.integers(0, n + 1, 2)) for _ in range(200)),
        ]
        for a, b in cases:
            out = np.empty((b - a, *truth.shape[1:]), dtype=truth.dtype.newbyteorder("="))
            direct(int(a), int(b), out)
            assert np.array_equal(out, f["a"][a:b]), (a, b)


def test_pickles_without_its_open_file(stored):
    path, truth = stored
    with h5py.File(path) as f:
        direct = DirectSlices.of(f["a"], path)
    out = np.empty((5, *truth.shape[1:]), dtype=truth.dtype)
    direct(3, 8, out)
    copy = pickle.loads(pickle.dumps(direct))
    again = np.empty_like(out)
    copy(3, 8, again)
    assert copy._file is not direct._file and np.array_equal(out, again)
    assert np.array_equal(out, truth[3:8])


@pytest.mark.parametrize(
    "spec",
    [
        dict(data=np.arange(1000.0), chunks=(100,), compression="gzip"),
        dict(data=np.arange(1000.0), chunks=(100,), shuffle=True),
        dict(data=np.arange(200.0).reshape(20, 10), chunks=(4, 5)),
        dict(shape=(1000,), dtype="f4", chunks=(100,)),
        dict(shape=(0,), dtype="f4"),
    ],
    ids=["gzip", "shuffle filter", "chunks split rows", "unallocated chunks", "empty"],
)
def test_unmappable_storage_falls_back_to_h5py(tmp_path, spec):
    path = tmp_path / "a.h5"
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("a", **spec)
        if "data" not in spec and ds.size:
            ds[:100] = 1.0
    with h5py.File(path) as f:
        assert DirectSlices.of(f["a"], path) is None
        read = slice_reader(f["a"], path)
        n = min(len(f["a"]), 7)
        out = np.empty((n, *f["a"].shape[1:]), dtype=f["a"].dtype)
        read(0, n, out)
        assert np.array_equal(out, f["a"][:n])


def test_extent_past_end_of_file_names_it(tmp_path):
    path = tmp_path / "a.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.arange(1000.0), chunks=(100,))
    short = tmp_path / "short.h5"
    short.write_bytes(path.read_bytes()[:2000])
    with h5py.File(path) as f, pytest.raises(DataError, match="short.h5.*'/a'.*truncated"):
        DirectSlices.of(f["a"], short)


def test_h5ad_reads_identical_with_and_without_direct(tmp_path):
    paths = make_anndata_collection(
        tmp_path, cells=3000, genes=50, plates=3, density=0.1, progress=False
    )
    rows = np.sort(np.random.default_rng(1).choice(3000, 700, replace=True))
    fast = H5ADCollection(paths, direct=True)
    slow = H5ADCollection(paths, direct=False)
    assert any(isinstance(h, DirectSlices) for r in fast.readers for h in _handles(r, rows))
    for output in ("csr", "dense"):
        for coalesce in (True, False):
            a, b = fast.read(rows, output, coalesce), slow.read(rows, output, coalesce)
            xa, xb = (a.X.toarray(), b.X.toarray()) if output == "csr" else (a.X, b.X)
            assert np.array_equal(xa, xb)
            assert all(np.array_equal(a.obs[k], b.obs[k]) for k in a.obs)
    assert fast.n_reads == slow.n_reads


def _handles(reader, rows):
    reader.read(rows[:1] % reader.n_rows)
    return reader._handles.values()


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_files_written_by_anndata(tmp_path, compression):
    import anndata as ad
    import pandas as pd
    import scipy.sparse as sp

    from raystudy.algorithms.sampling import H5ADReader

    x = sp.random(400, 30, density=0.2, format="csr", dtype=np.float32, random_state=0)
    obs = pd.DataFrame({"plate": pd.Categorical(["a", "b"] * 200)}, index=map(str, range(400)))
    path = tmp_path / "a.h5ad"
    ad.AnnData(X=x, obs=obs).write_h5ad(path, compression=compression)
    rows = np.sort(np.random.default_rng(0).choice(400, 150, replace=False))
    reader = H5ADReader(path)
    got = reader.read(rows, "dense")
    assert np.array_equal(got.X, x[rows].toarray())
    mapped = [isinstance(h, DirectSlices) for h in reader._handles.values()]
    assert mapped == [compression is None] * 2


def test_file_cut_after_opening_names_it(tmp_path):
    path = tmp_path / "a.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.arange(1000.0), chunks=(100,))
    with h5py.File(path) as f:
        direct = DirectSlices.of(f["a"], path)
    path.write_bytes(path.read_bytes()[: int(direct.byte_offset.max()) + 80])
    out = np.empty(1000)
    with pytest.raises(DataError, match="a.h5: file ends inside a dataset"):
        direct(0, 1000, out)


def test_will_need_takes_spans_across_extents(stored):
    path, truth = stored
    with h5py.File(path) as f:
        direct = DirectSlices.of(f["a"], path)
    n = len(truth)
    starts, stops = np.array([0, n // 3, n - 5]), np.array([n // 2, n - 1, n])
    direct.will_need(starts, stops)
    for a, b in zip(starts, stops, strict=True):
        out = np.empty((b - a, *truth.shape[1:]), dtype=truth.dtype.newbyteorder("="))
        direct(int(a), int(b), out)
        assert np.array_equal(out, truth[a:b])
