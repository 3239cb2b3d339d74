"""Graphs by name: synthetic CSBMs (built here) or real datasets from local raw files.

Nothing downloads. PyG's dataset classes download whenever a raw file is missing, so
:func:`load_graph` checks the expected raw files first and raises one
:class:`~raystudy.errors.DataError` line naming the missing files and the folder;
only then does it construct the class (which processes the raw files into
``processed/`` beside them on first use). The layout, under ``root``:

=========================  ============================================================
family (names)             raw files
=========================  ============================================================
Planetoid (Cora,           ``Planetoid/{Name}/raw/ind.{name}.{x,tx,allx,y,ty,ally,graph,
CiteSeer, PubMed)          test.index}``
WebKB (Cornell,            ``WebKB/{name}/raw/out1_node_feature_label.txt``,
Texas, Wisconsin)          ``out1_graph_edges.txt``, ``{name}_split_0.6_0.2_{0..9}.npz``
Actor                      ``Actor/raw/out1_node_feature_label.txt``, ``out1_graph_edges.txt``,
                           ``film_split_0.6_0.2_{0..9}.npz``
HeterophilousGraphDataset  ``HeterophilousGraphDataset/roman_empire/raw/roman_empire.npz``
(roman-empire)             (``node_features``, ``node_labels``, ``edges`` (E, 2),
                           ``train_masks``/``val_masks``/``test_masks`` (10, N))
Airports (USA, Brazil,     ``Airports/{name}/raw/{name}-airports.edgelist`` (``src dst``
Europe)                    per line) and ``labels-{name}-airports.txt`` (a header line, then
                           ``node label``); features are one-hot node identities, as PyG
Amazon (Computers,         ``Amazon/{Name}/raw/amazon_electronics_{name}.npz``
Photo)
Coauthor (CS,              ``Coauthor/{Name}/raw/ms_academic_{cs|phy}.npz``
Physics)
=========================  ============================================================

The first eight rows are the paper's 11 datasets; Amazon and Coauthor are kept as extra
graphs. Text files must end with a newline: PyG's readers drop the last line otherwise.
These are the folders and file names PyG 2.8's own classes use (a test checks it),
so files downloaded once elsewhere with PyG can be copied in unchanged.
"""

from __future__ import annotations

import functools
import pickle
import zipfile
from pathlib import Path

from torch_geometric.data import Data

from ...errors import DataError, MissingDataError
from .synthetic import CSBM, contextual_sbm, is_synthetic, parse_csbm

_PLANETOID = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
_SPLITS = range(10)

# name -> (family = PyG class name, the name PyG's class is given)
REAL_DATASETS: dict[str, tuple[str, str]] = {
    "cora": ("Planetoid", "Cora"), "citeseer": ("Planetoid", "CiteSeer"),
    "pubmed": ("Planetoid", "PubMed"),
    "cornell": ("WebKB", "Cornell"), "texas": ("WebKB", "Texas"),
    "wisconsin": ("WebKB", "Wisconsin"), "actor": ("Actor", "Actor"),
    "roman-empire": ("HeterophilousGraphDataset", "roman-empire"),
    "usa": ("Airports", "USA"), "brazil": ("Airports", "Brazil"),
    "europe": ("Airports", "Europe"),
    "computers": ("Amazon", "Computers"), "photo": ("Amazon", "Photo"),
    "cs": ("Coauthor", "CS"), "physics": ("Coauthor", "Physics"),
}
PAPER_DATASETS = ("Cora", "CiteSeer", "PubMed", "Texas", "Cornell", "Wisconsin", "Actor",
                  "roman-empire", "USA", "Brazil", "Europe")
"""The paper's 11 datasets (RESEARCH.md, section 5), as the paper space names them."""
_HETEROPHILOUS_KEYS = ("node_features", "node_labels", "edges", "train_masks", "val_masks",
                       "test_masks")


def dataset_key(name: str) -> str:
    """The lookup key of a dataset name: lower case, ``_`` read as ``-`` (roman_empire)."""
    return name.lower().replace("_", "-")


def raw_layout(name: str, root: str | Path) -> tuple[Path, list[str]]:
    """The raw folder and file names a real dataset needs (see the module docstring)."""
    key = dataset_key(name)
    if key not in REAL_DATASETS:
        raise DataError(f"unknown dataset {name!r}; real datasets: "
                        f"{', '.join(n for _, n in REAL_DATASETS.values())}, or a synthetic "
                        "csbm-h<homophily>")
    family, proper = REAL_DATASETS[key]
    base = Path(root).expanduser() / family
    if family == "Planetoid":
        return base / proper / "raw", [f"ind.{key}.{part}" for part in _PLANETOID]
    if family == "Amazon":
        return base / proper / "raw", [f"amazon_electronics_{key}.npz"]
    if family == "Coauthor":
        return base / proper / "raw", [f"ms_academic_{key[:3]}.npz"]
    if family == "HeterophilousGraphDataset":
        stem = key.replace("-", "_")
        return base / stem / "raw", [f"{stem}.npz"]
    if family == "Airports":
        return base / key / "raw", [f"{key}-airports.edgelist", f"labels-{key}-airports.txt"]
    texts = ["out1_node_feature_label.txt", "out1_graph_edges.txt"]
    if family == "WebKB":
        return base / key / "raw", texts + [f"{key}_split_0.6_0.2_{i}.npz" for i in _SPLITS]
    return base / "raw", texts + [f"film_split_0.6_0.2_{i}.npz" for i in _SPLITS]


def _check_planetoid(folder: Path, key: str) -> None:
    def read(part: str):
        path = folder / f"ind.{key}.{part}"
        try:
            with open(path, "rb") as handle:
                return path, pickle.load(handle, encoding="latin1")
        except Exception as exc:
            raise DataError(f"{path}: not a Planetoid pickle ({type(exc).__name__})") from None

    rows = {}
    for part in ("x", "tx", "allx", "y", "ty", "ally"):
        path, value = read(part)
        if not hasattr(value, "shape") or len(value.shape) != 2:
            raise DataError(f"{path}: expected a 2-D matrix, got {type(value).__name__}")
        rows[part] = value.shape[0]
    for a, b in (("x", "y"), ("tx", "ty"), ("allx", "ally")):
        if rows[a] != rows[b]:
            raise DataError(f"{folder}: ind.{key}.{a} has {rows[a]} rows but ind.{key}.{b} "
                            f"has {rows[b]}")
    path, graph = read("graph")
    if not isinstance(graph, dict):
        raise DataError(f"{path}: expected a dict of adjacency lists, got {type(graph).__name__}")
    index = folder / f"ind.{key}.test.index"
    try:
        count = sum(1 for line in index.read_text().splitlines() if line.strip())
    except (OSError, UnicodeDecodeError):
        raise DataError(f"{index}: not a text file of node ids") from None
    if count != rows["tx"]:
        raise DataError(f"{index}: {count} test ids for {rows['tx']} rows of ind.{key}.tx")


def check_raw_files(name: str, root: str | Path) -> None:
    """Raise one DataError line unless the dataset's raw files are there and readable."""
    if is_synthetic(name):
        return
    folder, files = raw_layout(name, root)
    missing = [f for f in files if not (folder / f).is_file()]
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4
                                          else "")
        raise MissingDataError(f"dataset {name}: missing {shown} in {folder} (copy the raw files "
                        "there; nothing is downloaded)")
    key = dataset_key(name)
    family = REAL_DATASETS[key][0]
    if family == "Planetoid":
        _check_planetoid(folder, key)
        return
    for f in files:
        path = folder / f
        if f.endswith(".npz"):
            if not zipfile.is_zipfile(path):
                raise DataError(f"{path}: not an .npz archive")
            continue
        text = path.read_text(errors="replace")
        if not text.endswith("\n"):
            raise DataError(f"{path}: does not end with a newline (PyG's reader would drop "
                            "its last line)")
        if family != "Airports" and not text.split("\n", 1)[0].strip():
            raise DataError(f"{path}: empty header line; expected the geom-gcn text format")
    if family == "HeterophilousGraphDataset":
        _check_heterophilous(folder / files[0])
    elif family == "Airports":
        _check_airports(folder / files[0], folder / files[1])


def _check_heterophilous(path: Path) -> None:
    import numpy as np

    with np.load(path) as raw:
        absent = [k for k in _HETEROPHILOUS_KEYS if k not in raw.files]
        if absent:
            raise DataError(f"{path}: missing arrays {', '.join(absent)} (expected "
                            f"{', '.join(_HETEROPHILOUS_KEYS)})")
        n, edges = raw["node_labels"].shape[0], raw["edges"]
        if raw["node_features"].shape[0] != n or edges.ndim != 2 or edges.shape[1] != 2:
            raise DataError(f"{path}: expected node_features with one row per label and "
                            f"edges of shape (E, 2), got {raw['node_features'].shape} and "
                            f"{edges.shape}")
        if edges.size and (edges.min() < 0 or edges.max() >= n):
            raise DataError(f"{path}: edges name nodes outside 0..{n - 1}")


def _check_airports(edgelist: Path, labels: Path) -> None:
    rows = labels.read_text().split("\n")[1:-1]          # a header line, then "node label"
    nodes = set()
    for i, row in enumerate(rows, start=2):
        parts = row.split()
        if len(parts) != 2 or not all(p.lstrip("-").isdigit() for p in parts):
            raise DataError(f"{labels}: line {i} is {row!r}; expected 'node label' (integers) "
                            "after one header line")
        nodes.add(int(parts[0]))
    for i, row in enumerate(edgelist.read_text().split("\n")[:-1], start=1):
        parts = row.split()
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise DataError(f"{edgelist}: line {i} is {row!r}; expected 'src dst' (node ids)")
        unknown = [p for p in parts if int(p) not in nodes]
        if unknown:
            raise DataError(f"{edgelist}: line {i} names node {unknown[0]}, which "
                            f"{labels.name} does not label")


def _pyg_dataset(name: str, root: Path):
    from torch_geometric import datasets

    family, proper = REAL_DATASETS[dataset_key(name)]
    if family == "Actor":
        return datasets.Actor(str(root / "Actor"))
    return getattr(datasets, family)(str(root / family), proper)


@functools.lru_cache(maxsize=8)
def _cached(name: str, root: str, defaults: CSBM, graph_seed: int) -> Data:
    if is_synthetic(name):
        try:
            params = parse_csbm(name, defaults)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        return contextual_sbm(params, seed=graph_seed)
    check_raw_files(name, root)
    try:
        data = _pyg_dataset(name, Path(root).expanduser())[0]
    except Exception as exc:
        folder, _ = raw_layout(name, root)
        raise DataError(f"dataset {name}: reading {folder} failed: "
                        f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                        ) from None
    return Data(x=data.x.float(), y=data.y.long().view(-1), edge_index=data.edge_index,
                num_nodes=int(data.num_nodes))


def load_graph(name: str, root: str | Path = "data/graphs", defaults: CSBM | None = None,
               graph_seed: int = 0) -> Data:
    """The graph ``name``: ``x`` (N, F) float, ``y`` (N,) long, ``edge_index`` (2, E).

    Synthetic names (``csbm-h0.7...``) are built with ``defaults`` for unnamed values
    and ``graph_seed``; real names are read from ``root`` (module docstring). The
    result is cached per process, so the trials an actor runs build it once.
    """
    data = _cached(name, str(root), defaults or CSBM(), int(graph_seed))
    return Data(x=data.x, y=data.y, edge_index=data.edge_index, num_nodes=data.num_nodes)


def num_classes(data: Data) -> int:
    return int(data.y.max()) + 1 if data.y.numel() else 0
