"""The synthetic Tahoe-like collection: format, layout, signal, atomic writes."""

import anndata as ad
import numpy as np
import pytest

from raystudy.algorithms.sampling import H5ADCollection, make_anndata_collection, synthetic
from raystudy.errors import UserError


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    out = tmp_path_factory.mktemp("syn")
    return make_anndata_collection(out, 3000, 200, 4, 0.1, seed=1, progress=False, cell_lines=6)


def test_files_readable_by_anndata_backed(collection):
    assert [p.name for p in collection] == [f"plate{i:02d}.h5ad" for i in range(4)]
    sizes = []
    for i, path in enumerate(collection):
        adata = ad.read_h5ad(path, backed="r")
        assert adata.n_vars == 200
        assert set(adata.obs["plate"].astype(str)) == {f"plate{i:02d}"}
        sizes.append(adata.n_obs)
        x = adata.X[:100]
        assert x.dtype == np.float32 and x.min() >= 0 and np.all(x.data == np.round(x.data))
        adata.file.close()
    assert sizes == [750] * 4
    assert not list(collection[0].parent.glob(".*partial*"))


def test_density_layout_and_determinism(collection, tmp_path):
    coll = H5ADCollection(collection)
    x = coll.read(np.arange(coll.n_rows)).X
    assert x.nnz / (3000 * 200) == pytest.approx(0.1, abs=0.02)
    lines = coll.obs["cell_line"][:750]
    assert np.count_nonzero(np.diff(lines)) <= 5  # one contiguous run per cell line
    again = make_anndata_collection(
        tmp_path, 3000, 200, 4, 0.1, seed=1, progress=False, cell_lines=6
    )
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(collection, again, strict=True))


def test_cell_line_signal_is_learnable(collection):
    coll = H5ADCollection(collection)
    x = np.log1p(coll.read(np.arange(coll.n_rows), output="dense").X)
    y = coll.obs["cell_line"]
    train = np.arange(coll.n_rows) % 2 == 0
    centroids = np.stack([x[train & (y == c)].mean(axis=0) for c in range(6)])
    pred = np.argmin(((x[~train, None, :] - centroids[None]) ** 2).sum(-1), axis=1)
    assert (pred == y[~train]).mean() > 0.8  # chance is about 1/6


def test_progress_bar_on_stderr(tmp_path, capsys):
    make_anndata_collection(tmp_path, 100, 10, 2, 0.3)
    err = capsys.readouterr().err
    assert "100/100 cells" in err


def test_interrupted_write_leaves_nothing(tmp_path, monkeypatch):
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return real(*args, **kwargs)

    real = synthetic._plate_lines
    monkeypatch.setattr(synthetic, "_plate_lines", failing)
    with pytest.raises(RuntimeError):
        make_anndata_collection(tmp_path, 100, 10, 3, 0.3, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_bad_arguments():
    with pytest.raises(UserError):
        make_anndata_collection("/tmp/unused", 2, 10, 3, 0.1)
    with pytest.raises(UserError):
        make_anndata_collection("/tmp/unused", 10, 10, 1, 0.0)
