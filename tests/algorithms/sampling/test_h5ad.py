"""AnnData readers against anndata itself; read counting; collection; errors."""

import anndata as ad
import h5py
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from raystudy.algorithms.sampling import H5ADCollection, H5ADReader, make_anndata_collection
from raystudy.errors import DataError


@pytest.fixture(scope="module")
def plates(tmp_path_factory):
    out = tmp_path_factory.mktemp("plates")
    return make_anndata_collection(out, cells=900, genes=40, plates=3, density=0.2, progress=False)


def truth(paths):
    adatas = [ad.read_h5ad(p) for p in paths]
    x = sp.vstack([a.X for a in adatas]).toarray()
    plate = np.concatenate([a.obs["plate"].astype(str).to_numpy() for a in adatas])
    line = np.concatenate([a.obs["cell_line"].astype(str).to_numpy() for a in adatas])
    return x, plate, line


def test_single_file_matches_anndata(plates):
    x, _, line = truth(plates[:1])
    reader = H5ADReader(plates[0], max_gap_bytes=0)
    rows = np.array([0, 1, 2, 3, 50, 51, 299, 299])
    out = reader.read(rows, output="dense")
    assert out.X.dtype == np.float32 and np.array_equal(out.X, x[rows])
    assert np.array_equal(reader.categories["cell_line"][out.obs["cell_line"]], line[rows])
    assert reader.n_reads == 2 * 3  # data + indices per run
    csr = reader.read(rows)
    assert isinstance(csr.X, sp.csr_matrix) and np.array_equal(csr.X.toarray(), x[rows])
    before = reader.n_reads
    reader.read(rows, coalesce=False)
    assert reader.n_reads - before == 2 * 7


def test_gap_merging_one_read_pair(plates):
    x, _, _ = truth(plates[:1])
    reader = H5ADReader(plates[0], max_gap_bytes=1 << 30)
    rows = np.array([3, 40, 41, 200, 250])
    assert np.array_equal(reader.read(rows, output="dense").X, x[rows])
    assert reader.n_reads == 2


def test_collection_global_rows_and_merged_categories(plates):
    x, plate, line = truth(plates)
    coll = H5ADCollection(plates, max_gap_bytes=0)
    assert (coll.n_rows, coll.n_cols) == (900, 40)
    assert coll.categories["plate"].tolist() == ["plate00", "plate01", "plate02"]
    rows = np.sort(np.random.default_rng(0).choice(900, 120, replace=False))
    out = coll.read(rows, output="dense")
    assert np.array_equal(out.X, x[rows])
    assert np.array_equal(coll.categories["plate"][out.obs["plate"]], plate[rows])
    assert np.array_equal(coll.categories["cell_line"][out.obs["cell_line"]], line[rows])
    coll.read(np.arange(290, 310))  # crosses plate00 -> plate01
    assert coll.n_reads == sum(r.n_reads for r in coll.readers)
    assert coll.file_of(np.array([0, 299, 300, 899])).tolist() == [0, 0, 1, 2]


def test_dense_x_written_by_anndata(tmp_path):
    x = np.random.default_rng(0).random((30, 6)).astype(np.float64)
    obs = pd.DataFrame({"batch": pd.Categorical(["a", "b", "c"] * 10), "n": np.arange(30)})
    obs.index = obs.index.astype(str)
    ad.AnnData(X=x, obs=obs).write_h5ad(tmp_path / "d.h5ad")
    reader = H5ADReader(tmp_path / "d.h5ad", max_gap_bytes=0)
    out = reader.read([2, 3, 4, 10])
    assert reader.n_reads == 2 and np.allclose(out.X.toarray(), x[[2, 3, 4, 10]])
    assert out.obs["n"].tolist() == [2, 3, 4, 10]
    assert reader.categories["batch"][out.obs["batch"]].tolist() == ["c", "a", "b", "b"]


def test_mismatched_genes_names_the_file(plates, tmp_path):
    other = make_anndata_collection(tmp_path, 50, 41, 1, 0.2, progress=False)[0]
    with pytest.raises(DataError, match=str(other)):
        H5ADCollection([plates[0], other])
    renamed = tmp_path / "renamed.h5ad"
    renamed.write_bytes(plates[1].read_bytes())
    with h5py.File(renamed, "r+") as f:
        names = f["var/_index"][()]
        names[0] = b"OTHER"
        f["var/_index"][...] = names
    with pytest.raises(DataError, match="renamed.h5ad"):
        H5ADCollection([plates[0], renamed])


def test_missing_truncated_and_wrong_files(plates, tmp_path):
    with pytest.raises(DataError, match="absent.h5ad"):
        H5ADReader(tmp_path / "absent.h5ad")
    cut = tmp_path / "cut.h5ad"
    cut.write_bytes(plates[0].read_bytes()[: plates[0].stat().st_size // 2])
    with pytest.raises(DataError, match="cut.h5ad"):
        H5ADCollection([plates[0], cut])
    with pytest.raises(DataError, match=r"plate00.h5ad.*'nope'"):
        H5ADReader(plates[0], obs_columns=["nope"])
    for edit, message in [
        (lambda f: f.__delitem__("X/indices"), "X/indices"),
        (lambda f: f.__delitem__("X"), "'X'"),
        (lambda f: f["X"].attrs.__setitem__("encoding-type", "csc_matrix"), "csc_matrix"),
    ]:
        broken = tmp_path / "broken.h5ad"
        broken.write_bytes(plates[0].read_bytes())
        with h5py.File(broken, "r+") as f:
            edit(f)
        with pytest.raises(DataError, match=rf"broken.h5ad.*{message}"):
            H5ADReader(broken)
