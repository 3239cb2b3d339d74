"""Local loaders: the paper's raw formats read from files the tests write; missing files,
one line."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from raw_fixtures import PLANETOID_N, write_planetoid, write_raw
from torch_geometric import datasets as pyg_datasets

from raystudy.algorithms.graph_transfer.datasets import (
    PAPER_DATASETS,
    REAL_DATASETS,
    check_raw_files,
    load_graph,
    raw_layout,
)
from raystudy.errors import DataError


@pytest.fixture
def no_download(monkeypatch):
    def refuse(self):
        raise AssertionError("a dataset tried to download")

    for cls in {family for family, _ in REAL_DATASETS.values()}:
        monkeypatch.setattr(getattr(pyg_datasets, cls), "download", refuse)


def undirected(edge_index: torch.Tensor) -> set[tuple[int, int]]:
    return {(min(u, v), max(u, v)) for u, v in edge_index.t().tolist()}


def test_planetoid_from_raw_ind_files(tmp_path, no_download):
    expected = write_planetoid(tmp_path, "Cora")
    data = load_graph("Cora", tmp_path)
    assert data.num_nodes == PLANETOID_N
    np.testing.assert_array_equal(data.x.numpy(), expected.x)   # test rows back in place
    np.testing.assert_array_equal(data.y.numpy(), expected.y)
    assert undirected(data.edge_index) == expected.edges
    assert data.edge_index.size(1) == 2 * len(expected.edges)


@pytest.mark.parametrize("name", ["Texas", "Actor", "roman-empire", "USA"])
def test_paper_formats_read_as_written_and_as_pyg_parses_them(name, tmp_path, no_download):
    """Each raw format the fixture writes: our loader gives back what was written, and
    PyG's own class (on a separate copy) parses the same files to the same graph."""
    expected = write_raw(tmp_path / "ours", name)
    shutil.copytree(tmp_path / "ours", tmp_path / "pyg")
    data = load_graph(name, tmp_path / "ours")
    np.testing.assert_array_equal(data.x.numpy(), expected.x)
    np.testing.assert_array_equal(data.y.numpy(), expected.y)
    assert undirected(data.edge_index) == expected.edges and data.num_nodes == len(expected.y)
    family, proper = REAL_DATASETS[name.lower()]
    cls = getattr(pyg_datasets, family)
    pyg = (cls(str(tmp_path / "pyg" / family)) if family == "Actor"
           else cls(str(tmp_path / "pyg" / family), proper))[0]
    assert torch.equal(pyg.x.float(), data.x) and torch.equal(pyg.y.view(-1), data.y)
    assert undirected(pyg.edge_index) == expected.edges


def test_paper_space_lists_the_papers_eleven():
    assert len(PAPER_DATASETS) == 11
    assert {"roman-empire", "USA", "Brazil", "Europe"} <= set(PAPER_DATASETS)
    assert all(name.lower() in REAL_DATASETS for name in PAPER_DATASETS)


def test_the_fixture_writes_each_of_the_papers_eleven_where_the_loader_looks(tmp_path):
    for name in PAPER_DATASETS:
        write_raw(tmp_path, name)
        check_raw_files(name, tmp_path)               # present, readable, consistent


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
    with pytest.raises(DataError, match="missing usa-airports.edgelist, labels-usa-airports."
                                         "txt in .*Airports/usa/raw"):
        load_graph("USA", tmp_path)
    with pytest.raises(DataError, match="missing roman_empire.npz in "
                                         ".*HeterophilousGraphDataset/roman_empire/raw"):
        load_graph("roman-empire", tmp_path)
    with pytest.raises(DataError, match="unknown dataset 'Karate'"):
        load_graph("Karate", tmp_path)


def test_corrupt_planetoid_file_is_a_data_error(tmp_path):
    folder = tmp_path / "Planetoid" / "Cora" / "raw"
    write_planetoid(tmp_path)
    (folder / "ind.cora.ty").write_bytes(b"not a pickle")
    with pytest.raises(DataError, match="ind.cora.ty: not a Planetoid pickle"):
        check_raw_files("Cora", tmp_path)
    write_planetoid(tmp_path / "b")
    (tmp_path / "b" / "Planetoid" / "Cora" / "raw" / "ind.cora.test.index").write_text("509\n")
    with pytest.raises(DataError, match="1 test ids for 7 rows of ind.cora.tx"):
        check_raw_files("Cora", tmp_path / "b")


@pytest.mark.parametrize("name", sorted(REAL_DATASETS))
def test_layout_is_the_one_pyg_uses(name, tmp_path):
    """Our folder and file names equal PyG 2.8's own properties for each class."""
    family, proper = REAL_DATASETS[name]
    cls = getattr(pyg_datasets, family)
    fake = SimpleNamespace(root=str(tmp_path / family), split="public")
    fake.name = {"Amazon": proper.lower(), "WebKB": proper.lower(), "Airports": proper.lower(),
                 "HeterophilousGraphDataset": proper.replace("-", "_")}.get(family, proper)
    expected_dir = cls.raw_dir.fget(fake) if "raw_dir" in cls.__dict__ else str(
        tmp_path / family / "raw")
    names = cls.raw_file_names.fget(fake)
    folder, files = raw_layout(name, tmp_path)
    if family == "Amazon":   # Amazon's raw_dir capitalises the name it lower-cased
        expected_dir = str(tmp_path / family / proper / "raw")
    assert str(folder) == expected_dir
    assert files == ([names] if isinstance(names, str) else list(names))


def test_corrupt_airports_and_heterophilous_files_say_what_is_wrong(tmp_path):
    write_raw(tmp_path, "USA")
    folder = tmp_path / "Airports" / "usa" / "raw"
    edges = folder / "usa-airports.edgelist"
    edges.write_text(edges.read_text() + "10000 99\n")
    with pytest.raises(DataError, match="line 15 names node 99, which labels-usa-airports.txt "
                                        "does not label"):
        check_raw_files("USA", tmp_path)
    edges.write_text("10000 10037")                       # no final newline: PyG drops it
    with pytest.raises(DataError, match="does not end with a newline"):
        check_raw_files("USA", tmp_path)
    write_raw(tmp_path, "roman-empire")
    path = tmp_path / "HeterophilousGraphDataset" / "roman_empire" / "raw" / "roman_empire.npz"
    np.savez(path, node_features=np.zeros((3, 2)), node_labels=np.zeros(3))
    with pytest.raises(DataError, match="missing arrays edges, train_masks, val_masks"):
        check_raw_files("roman_empire", tmp_path)


def test_synthetic_names_need_no_files(tmp_path):
    data = load_graph("csbm-h0.3-n200", tmp_path)
    assert data.num_nodes == 200 and data.y.dtype == torch.long
