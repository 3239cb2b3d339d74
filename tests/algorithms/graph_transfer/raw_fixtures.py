"""Tiny graphs written in the raw formats PyG's readers take, for loaders and profile runs.

``write_raw(root, name)`` writes dataset ``name`` under ``root`` in the folder PyG's class
expects (``Planetoid/Cora/raw/ind.cora.*``, ``WebKB/texas/raw/...``, ``Actor/raw/...``,
``Airports/usa/raw/...``, ``HeterophilousGraphDataset/roman_empire/raw/...``) and returns
what a correct reader must give back: features, labels and undirected edges. The paths
are spelled out here, not taken from the code under test. Every fixture has 3 classes,
both homophilous and heterophilous edges, and no isolated node.
"""

from __future__ import annotations

import pickle
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

# Planetoid: PyG takes the 500 nodes after the labelled ones as validation, so a graph
# has >= len(y) + 500 nodes: 3 labelled, 500 more, 7 test nodes listed unsorted.
PLANETOID_N = 510
PLANETOID_TEST_ORDER = [509, 503, 507, 504, 508, 505, 506]
SMALL_N = 12                                    # WebKB, Actor, Airports, heterophilous


@dataclass
class Expected:
    """What a reader must return: ``x`` (N, F), ``y`` (N,), ``edges`` {(u, v), u < v}."""

    x: np.ndarray
    y: np.ndarray
    edges: set[tuple[int, int]]


def _ring_edges(n: int) -> list[tuple[int, int]]:
    return [(i, (i + 1) % n) for i in range(n)] + [(0, n // 2), (2, n - 3)]


def _undirected(edges) -> set[tuple[int, int]]:
    return {(min(u, v), max(u, v)) for u, v in edges if u != v}


def write_planetoid(root: Path, name: str = "Cora") -> Expected:
    """``ind.{name}.*`` pickles (sparse x/tx/allx, one-hot y/ty/ally, adjacency dict)."""
    key = name.lower()
    folder = Path(root) / "Planetoid" / name / "raw"
    folder.mkdir(parents=True, exist_ok=True)
    n, order = PLANETOID_N, PLANETOID_TEST_ORDER
    edges = _ring_edges(n)
    features = np.random.default_rng(0).integers(0, 2, size=(n, 5)).astype(np.float32)
    labels = np.arange(n) % 3
    onehot = np.eye(3)[labels]
    items = {"x": sp.csr_matrix(features[:3]), "y": onehot[:3],
             "allx": sp.csr_matrix(features[:503]), "ally": onehot[:503],
             "tx": sp.csr_matrix(features[order]), "ty": onehot[order]}
    graph = defaultdict(list)
    for u, v in edges:
        graph[u].append(v)
        graph[v].append(u)
    items["graph"] = graph
    for part, value in items.items():
        with open(folder / f"ind.{key}.{part}", "wb") as handle:
            pickle.dump(value, handle, protocol=2)
    (folder / f"ind.{key}.test.index").write_text("".join(f"{i}\n" for i in order))
    return Expected(features, labels, _undirected(edges))


def _splits(folder: Path, prefix: str, n: int) -> None:
    for i in range(10):
        order = np.random.default_rng(i).permutation(n)
        masks = {m: np.isin(np.arange(n), part) for m, part in
                 zip(("train_mask", "val_mask", "test_mask"), np.split(order, [6, 9]),
                     strict=True)}
        np.savez(folder / f"{prefix}_split_0.6_0.2_{i}.npz", **masks)


def _edge_file(folder: Path, edges) -> None:
    lines = "".join(f"{u}\t{v}\n" for u, v in edges)
    (folder / "out1_graph_edges.txt").write_text("node_id\tnode_id\n" + lines)


def write_webkb(root: Path, name: str = "Texas") -> Expected:
    """geom-gcn text: ``id<TAB>f1,f2,...<TAB>label`` lines, a ``src<TAB>dst`` edge list,
    ten ``{name}_split_0.6_0.2_{i}.npz`` mask files."""
    key = name.lower()
    folder = Path(root) / "WebKB" / key / "raw"
    folder.mkdir(parents=True, exist_ok=True)
    n = SMALL_N
    x = np.random.default_rng(1).integers(0, 2, size=(n, 6)).astype(np.float32)
    y = np.arange(n) % 3
    rows = "".join(f"{i}\t{','.join(str(int(v)) for v in x[i])}\t{y[i]}\n" for i in range(n))
    (folder / "out1_node_feature_label.txt").write_text("node_id\tfeature\tlabel\n" + rows)
    edges = _ring_edges(n)
    _edge_file(folder, edges)
    _splits(folder, key, n)
    return Expected(x, y, _undirected(edges))


def write_actor(root: Path) -> Expected:
    """Actor (film): features as the indices of the node's non-zero words."""
    folder = Path(root) / "Actor" / "raw"
    folder.mkdir(parents=True, exist_ok=True)
    n, words = SMALL_N, 7
    x = np.zeros((n, words), dtype=np.float32)
    lines = []
    for i in range(n):
        on = sorted({i % words, (3 * i + 1) % words})
        x[i, on] = 1
        lines.append(f"{i}\t{','.join(map(str, on))}\t{i % 3}\n")
    (folder / "out1_node_feature_label.txt").write_text("id\tfeature\tlabel\n" + "".join(lines))
    edges = _ring_edges(n)
    _edge_file(folder, edges)
    _splits(folder, "film", n)
    return Expected(x, np.arange(n) % 3, _undirected(edges))


def write_airports(root: Path, name: str = "USA") -> Expected:
    """struc2vec files: ``src dst`` lines over raw airport ids (not 0..N-1), and a label
    file with a header; node i is the i-th labelled id, its feature the one-hot of i."""
    key = name.lower()
    folder = Path(root) / "Airports" / key / "raw"
    folder.mkdir(parents=True, exist_ok=True)
    n = SMALL_N
    ids = [10_000 + 37 * i for i in range(n)][::-1]      # any integers, listed in any order
    y = (np.arange(n) * 2) % 3
    (folder / f"labels-{key}-airports.txt").write_text(
        "node label\n" + "".join(f"{ids[i]} {y[i]}\n" for i in range(n)))
    edges = _ring_edges(n)
    (folder / f"{key}-airports.edgelist").write_text(
        "".join(f"{ids[u]} {ids[v]}\n" for u, v in edges))
    return Expected(np.eye(n, dtype=np.float32), y, _undirected(edges))


def write_heterophilous(root: Path, name: str = "roman_empire") -> Expected:
    """``{name}.npz``: node_features, node_labels, edges (E, 2), {train,val,test}_masks
    (10, N), as Platonov et al. publish them."""
    folder = Path(root) / "HeterophilousGraphDataset" / name / "raw"
    folder.mkdir(parents=True, exist_ok=True)
    n = SMALL_N
    x = np.random.default_rng(2).normal(size=(n, 4)).astype(np.float32)
    y = np.arange(n) % 3
    edges = _ring_edges(n)
    masks = np.zeros((3, 10, n), dtype=bool)
    for i in range(10):
        order = np.random.default_rng(i).permutation(n)
        for j, part in enumerate(np.split(order, [6, 9])):
            masks[j, i, part] = True
    np.savez(folder / f"{name}.npz", node_features=x, node_labels=y,
             edges=np.array(edges, dtype=np.int64), train_masks=masks[0], val_masks=masks[1],
             test_masks=masks[2])
    return Expected(x, y, _undirected(edges))


def write_raw(root: Path, name: str) -> Expected:
    """Dataset ``name`` (Cora, CiteSeer, PubMed, Texas, Cornell, Wisconsin, Actor,
    roman-empire, USA, Brazil, Europe) as a tiny fixture under ``root``."""
    if name in ("Cora", "CiteSeer", "PubMed"):
        return write_planetoid(root, name)
    if name in ("Texas", "Cornell", "Wisconsin"):
        return write_webkb(root, name)
    if name == "Actor":
        return write_actor(root)
    if name in ("USA", "Brazil", "Europe"):
        return write_airports(root, name)
    if name == "roman-empire":
        return write_heterophilous(root)
    raise ValueError(f"no raw fixture for {name!r}")
