"""Dense readers: HDF5 2-D datasets and NumPy memmaps; read counting, errors."""

import pickle

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

from raystudy.algorithms.sampling import HDF5ArrayReader, MemmapReader
from raystudy.errors import DataError

ROWS = np.array([0, 1, 2, 2, 7, 8, 20, 39])  # runs [0,3) [7,9) [20,21) [39,40)


@pytest.fixture(params=["hdf5", "memmap"])
def dense(request, tmp_path):
    x = np.arange(40 * 5, dtype=np.float32).reshape(40, 5)
    labels = np.arange(40) % 3
    if request.param == "hdf5":
        path = tmp_path / "x.h5"
        with h5py.File(path, "w") as f:
            f["X"], f["label"] = x, labels

        def make(**kw):
            return HDF5ArrayReader(path, "X", obs={"label": "label"}, **kw)

    else:
        path = tmp_path / "x.npy"
        np.save(path, x)

        def make(**kw):
            return MemmapReader(path, obs={"label": labels}, **kw)

    return make, x, labels


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_memmap_raw_file(tmp_path, dtype):
    x = np.random.default_rng(0).random((6, 3)).astype(dtype)
    x.tofile(tmp_path / "x.bin")
    reader = MemmapReader(tmp_path / "x.bin", dtype=dtype, shape=(6, 3))
    out = reader.read([1, 2, 5], output="dense")
    assert out.X.dtype == dtype and np.array_equal(out.X, x[[1, 2, 5]])


def test_values_obs_and_formats(dense):
    make, x, labels = dense
    reader = make(max_gap_bytes=0)
    out = reader.read(ROWS, output="dense")
    assert isinstance(out.X, np.ndarray) and out.X.shape == (8, 5)
    assert np.array_equal(out.X, x[ROWS]) and np.array_equal(out.obs["label"], labels[ROWS])
    csr = reader.read(ROWS)
    assert sp.issparse(csr.X) and np.array_equal(csr.X.toarray(), x[ROWS])
    part = out.take([3, 0])
    assert part.rows.tolist() == [2, 0] and np.array_equal(part.X, x[[2, 0]])


def test_one_read_per_run(dense):
    make, _, _ = dense
    reader = make(max_gap_bytes=0)
    reader.read(ROWS)
    assert reader.n_reads == 4
    reader.read(ROWS, coalesce=False)
    assert reader.n_reads == 4 + 7  # one read per distinct row
    reader.read(np.arange(10, 30))
    assert reader.n_reads == 4 + 7 + 1


def test_gap_merging_reads_through_small_holes(dense):
    make, x, _ = dense
    reader = make(max_gap_bytes=4 * 5 * 4)  # holes of up to 4 rows of 5 float32
    out = reader.read(ROWS, output="dense")
    assert np.array_equal(out.X, x[ROWS])
    assert reader.n_reads == 3  # [0,9) merged; 20 and 39 stay alone


def test_pickle_roundtrip(dense):
    make, x, _ = dense
    reader = make()
    reader.read([1, 2])
    clone = pickle.loads(pickle.dumps(reader))
    assert np.array_equal(clone.read([3], output="dense").X, x[[3]])


def test_rows_must_be_sorted_and_in_range(dense):
    make, _, _ = dense
    with pytest.raises(ValueError):
        make().read([3, 1])
    with pytest.raises(ValueError):
        make().read([40])
    with pytest.raises(ValueError):
        make().read([1], output="coo")


def test_errors_name_the_file(tmp_path):
    missing = tmp_path / "none.h5"
    with pytest.raises(DataError, match="none.h5"):
        HDF5ArrayReader(missing)
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f["Y"] = np.zeros((4, 2))
        f["short"] = np.zeros(3)
    with pytest.raises(DataError, match=r"x\.h5.*'X'"):
        HDF5ArrayReader(path)
    with pytest.raises(DataError, match=r"x\.h5.*'label'"):
        HDF5ArrayReader(path, "Y", obs={"label": "label"})
    with pytest.raises(DataError, match=r"x\.h5.*'short'"):
        HDF5ArrayReader(path, "Y", obs={"short": "short"})
    with pytest.raises(DataError, match="x.h5"):
        HDF5ArrayReader(path, "short")
    truncated = tmp_path / "cut.h5"
    truncated.write_bytes(path.read_bytes()[:500])
    with pytest.raises(DataError, match="cut.h5"):
        HDF5ArrayReader(truncated, "Y")
    np.save(tmp_path / "a.npy", np.zeros((100, 4)))
    (tmp_path / "b.npy").write_bytes((tmp_path / "a.npy").read_bytes()[:300])
    with pytest.raises(DataError, match="b.npy"):
        MemmapReader(tmp_path / "b.npy")
    with pytest.raises(DataError, match="c.npy"):
        MemmapReader(tmp_path / "c.npy")


def test_memmap_reader_pickles_without_its_data(tmp_path):
    x = np.random.default_rng(0).random((2000, 50))
    np.save(tmp_path / "x.npy", x)
    reader = MemmapReader(tmp_path / "x.npy")
    blob = pickle.dumps(reader)
    assert len(blob) < x.nbytes / 100
    again = pickle.loads(blob)
    assert np.array_equal(again.read([3, 1999], output="dense").X, x[[3, 1999]])


def test_memmap_reader_refuses_fortran_order(tmp_path):
    np.save(tmp_path / "f.npy", np.asfortranarray(np.ones((4, 3))))
    with pytest.raises(DataError, match="f.npy.*C order"):
        MemmapReader(tmp_path / "f.npy")
