"""Local loaders: Planetoid read from ind.* files the test writes; missing files, one line."""

from __future__ import annotations

import pickle
from collections import defaultdict
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric import datasets as pyg_datasets

from raystudy.algorithms.graph_transfer.datasets import (
    REAL_DATASETS,
    check_raw_files,
    load_graph,
    raw_layout,
)
from raystudy.errors import DataError

# PyG's reader takes the 500 nodes after the labelled ones as its validation set, so a
# Planetoid graph has at least len(y) + 500 nodes: 3 labelled, 500 more, 7 test nodes.
N = 510
EDGES = [(i, (i + 1) % N) for i in range(N)] + [(2, 507), (0, 250)]
TEST_ORDER = [509, 503, 507, 504, 508, 505, 506]   # ind.*.test.index lists them unsorted


def write_planetoid(folder, name: str = "cora") -> tuple[np.ndarray, np.ndarray]:
    """3 classes: nodes 0-502 in allx (0-2 labelled in x), 503-509 the test nodes."""
    rng = np.random.default_rng(0)
    features = rng.integers(0, 2, size=(N, 5)).astype(np.float32)
    labels = np.arange(N) % 3
    onehot = np.eye(3)[labels]
    folder.mkdir(parents=True)
    items = {"x": sp.csr_matrix(features[:3]), "y": onehot[:3],
             "allx": sp.csr_matrix(features[:503]), "ally": onehot[:503],
             "tx": sp.csr_matrix(features[TEST_ORDER]), "ty": onehot[TEST_ORDER]}
    graph = defaultdict(list)
    for u, v in EDGES:
        graph[u].append(v)
        graph[v].append(u)
    items["graph"] = graph
    for part, value in items.items():
        with open(folder / f"ind.{name}.{part}", "wb") as handle:
            pickle.dump(value, handle, protocol=2)
    (folder / f"ind.{name}.test.index").write_text("".join(f"{i}\n" for i in TEST_ORDER))
    return features, labels


@pytest.fixture
def no_download(monkeypatch):
    def refuse(self):
        raise AssertionError("a dataset tried to download")

    for cls in ("Planetoid", "Amazon", "Coauthor", "WebKB", "Actor"):
        monkeypatch.setattr(getattr(pyg_datasets, cls), "download", refuse)


def test_planetoid_from_raw_ind_files(tmp_path, no_download):
    features, labels = write_planetoid(tmp_path / "Planetoid" / "Cora" / "raw")
    data = load_graph("Cora", tmp_path)
    assert data.num_nodes == N
    np.testing.assert_array_equal(data.x.numpy(), features)   # test rows back in place
    np.testing.assert_array_equal(data.y.numpy(), labels)
    got = {tuple(sorted(e)) for e in data.edge_index.t().tolist()}
    assert got == {tuple(sorted(e)) for e in EDGES}
    assert data.edge_index.size(1) == 2 * len(EDGES)


def test_missing_raw_files_are_one_line_naming_files_and_folder(tmp_path, no_download):
    with pytest.raises(DataError) as info:
        load_graph("PubMed", tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert "ind.pubmed.x, ind.pubmed.tx, ind.pubmed.allx, ind.pubmed.y and 4 more" in message
    assert str(tmp_path / "Planetoid" / "PubMed" / "raw") in message
    assert "nothing is downloaded" in message
    with pytest.raises(DataError, match="ms_academic_cs.npz in .*Coauthor/CS/raw"):
        load_graph("CS", tmp_path)
    with pytest.raises(DataError, match="unknown dataset 'Karate'"):
        load_graph("Karate", tmp_path)


def test_corrupt_planetoid_file_is_a_data_error(tmp_path):
    folder = tmp_path / "Planetoid" / "Cora" / "raw"
    write_planetoid(folder)
    (folder / "ind.cora.ty").write_bytes(b"not a pickle")
    with pytest.raises(DataError, match="ind.cora.ty: not a Planetoid pickle"):
        check_raw_files("Cora", tmp_path)
    write_planetoid(tmp_path / "b" / "Planetoid" / "Cora" / "raw")
    (tmp_path / "b" / "Planetoid" / "Cora" / "raw" / "ind.cora.test.index").write_text("509\n")
    with pytest.raises(DataError, match="1 test ids for 7 rows of ind.cora.tx"):
        check_raw_files("Cora", tmp_path / "b")


@pytest.mark.parametrize("name", sorted(REAL_DATASETS))
def test_layout_is_the_one_pyg_uses(name, tmp_path):
    """Our folder and file names equal PyG 2.8's own properties for each class."""
    family, proper = REAL_DATASETS[name]
    cls = getattr(pyg_datasets, family)
    fake = SimpleNamespace(root=str(tmp_path / family), split="public")
    fake.name = {"Amazon": proper.lower(), "WebKB": proper.lower()}.get(family, proper)
    expected_dir = cls.raw_dir.fget(fake) if "raw_dir" in cls.__dict__ else str(
        tmp_path / family / "raw")
    names = cls.raw_file_names.fget(fake)
    folder, files = raw_layout(name, tmp_path)
    if family == "Amazon":   # Amazon's raw_dir capitalises the name it lower-cased
        expected_dir = str(tmp_path / family / proper / "raw")
    assert str(folder) == expected_dir
    assert files == ([names] if isinstance(names, str) else list(names))


def test_synthetic_names_need_no_files(tmp_path):
    data = load_graph("csbm-h0.3-n200", tmp_path)
    assert data.num_nodes == 200 and data.y.dtype == torch.long
