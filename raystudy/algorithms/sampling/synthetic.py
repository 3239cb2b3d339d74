"""A synthetic Tahoe-like single-cell collection: one ``.h5ad`` file per plate.

Paper: D'Ascenzo & Cultrera di Montesano, "scDataset", arXiv 2506.01883, whose
benchmark is Tahoe-100M (14 plate files, 50 cell lines, rows stored plate by
plate). This generator writes the same layout at any size, offline, so the
sampler, readers, benchmark and the ``cell_classifier`` study have data:

* rows are stored plate by plate; inside a plate, cells of one cell line form
  one contiguous run (lines in a random order per plate), as files written
  sample by sample are;
* gene ``g`` of cell ``i`` (cell line ``l``, plate ``p``) is non-zero with
  probability ``q = sigmoid(a_g + L_lg + P_pg + d_i)`` and then holds
  ``1 + NB(r = 2, mean = m_g exp(L_lg))`` (a zero-inflated negative-binomial-
  like count), with ``a_g`` set so that the mean density is about ``density``,
  cell-line effects ``L_lg ~ N(0, 1)`` on a random 20% of genes (the signal a
  classifier learns), plate effects ``P_pg ~ N(0, 0.25^2)`` and depth
  ``d_i ~ N(0, 0.3^2)``; ``a_g ~ N(c, 1)`` with ``c`` found by bisection on a
  sample of cells so that the mean of ``q`` is ``density``;
* ``X`` is float32 CSR (int32 ``indices``, int64 ``indptr``); obs has the
  categorical columns ``cell_line`` (``CL00``...) and ``plate`` (``plate00``...).

Files are written in chunks of cells (memory stays near ``chunk_cells x genes``
floats) under a temporary name and renamed into place only when every plate is
complete, so an interrupted run leaves no file that looks finished.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import h5py
import numpy as np

from ...errors import UserError

__all__ = ["make_anndata_collection", "plate_path"]

NB_SHAPE = 2.0
STR = h5py.string_dtype()


def plate_path(out_dir: str | Path, plate: int) -> Path:
    """Path of plate ``plate``'s file in ``out_dir``."""
    return Path(out_dir) / f"plate{plate:02d}.h5ad"


class _Progress:
    """A one-line progress bar on stderr, redrawn at most twice a second."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.done = total, enabled, 0
        self.start = self.last = time.monotonic()

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self.last > 0.5 or self.done >= self.total):
            self.last = now
            filled = int(30 * self.done / max(1, self.total))
            sys.stderr.write(
                f"\rmake-anndata [{'#' * filled}{'.' * (30 - filled)}] "
                f"{self.done:,}/{self.total:,} cells {now - self.start:.0f}s"
            )
            if self.done >= self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def _attrs(node: h5py.HLObject, kind: str, version: str, **extra: object) -> None:
    node.attrs["encoding-type"] = kind
    node.attrs["encoding-version"] = version
    for key, value in extra.items():
        node.attrs[key] = value


def _strings(group: h5py.Group, name: str, values: list[str]) -> None:
    _attrs(
        group.create_dataset(name, data=np.array(values, dtype=object), dtype=STR),
        "string-array",
        "0.2.0",
    )


def _categorical(obs: h5py.Group, name: str, categories: list[str], codes: np.ndarray) -> None:
    group = obs.create_group(name)
    _attrs(group, "categorical", "0.2.0", ordered=False)
    _strings(group, "categories", categories)
    _attrs(group.create_dataset("codes", data=codes), "array", "0.2.0")


def _write_skeleton(f: h5py.File, plate: int, lines: np.ndarray, n_lines: int, genes: int) -> None:
    _attrs(f, "anndata", "0.1.0")
    for name in ("layers", "obsm", "obsp", "uns", "varm", "varp"):
        _attrs(f.create_group(name), "dict", "0.1.0")
    obs = f.create_group("obs")
    _attrs(obs, "dataframe", "0.2.0", _index="_index", **{"column-order": ["cell_line", "plate"]})
    _strings(obs, "_index", [f"p{plate:02d}-c{i:08d}" for i in range(len(lines))])
    _categorical(obs, "cell_line", [f"CL{c:02d}" for c in range(n_lines)], lines.astype(np.int8))
    _categorical(obs, "plate", [f"plate{plate:02d}"], np.zeros(len(lines), np.int8))
    var = f.create_group("var")
    _attrs(var, "dataframe", "0.2.0", _index="_index", **{"column-order": np.array([], "S1")})
    _strings(var, "_index", [f"G{g:05d}" for g in range(genes)])


def _plate_lines(rng: np.random.Generator, n_cells: int, n_lines: int) -> np.ndarray:
    """Cell line of each cell of a plate: one contiguous run per line."""
    shares = rng.dirichlet(np.full(n_lines, 20.0))
    counts = rng.multinomial(n_cells, shares)
    return np.repeat(rng.permutation(n_lines), counts[:n_lines])


def _calibrate(base: np.ndarray, line_fx: np.ndarray, density: float, seed: int) -> np.ndarray:
    """Shift ``a_g`` by one constant so that the mean of ``q`` is ``density`` (bisection)."""
    rng = np.random.default_rng(seed)
    sample = base + line_fx[rng.integers(0, len(line_fx), 512)] + rng.normal(0, 0.35, (512, 1))
    lo, hi = -30.0, 30.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.mean(1 / (1 + np.exp(-(sample + mid)))) < density else (lo, mid)
    return base + (lo + hi) / 2


def make_anndata_collection(
    out_dir: str | Path,
    cells: int,
    genes: int,
    plates: int,
    density: float,
    seed: int = 0,
    progress: bool = True,
    *,
    cell_lines: int = 50,
    chunk_cells: int = 8192,
) -> list[Path]:
    """Write a synthetic collection and return its files, in row order.

    Args:
        out_dir: folder to write ``plate00.h5ad``, ``plate01.h5ad``, ... into.
        cells: total cells, split evenly over the plates.
        genes: genes per cell (columns of ``X``).
        plates: number of files.
        density: target fraction of non-zero entries, in ``(0, 1]``.
        seed: seed of everything drawn (default: 0).
        progress: draw a progress bar on stderr (default: ``True``).
        cell_lines: number of cell lines (default: 50, as Tahoe-100M).
        chunk_cells: cells generated per write (default: 8192).

    Returns:
        The ``plates`` file paths.
    """
    if not (cells >= plates >= 1 and genes >= 1 and 0 < density <= 1 and cell_lines >= 1):
        raise UserError(
            "make-anndata needs cells >= plates >= 1, genes >= 1, 0 < density <= 1, "
            f"cell_lines >= 1 (got {cells}, {plates}, {genes}, {density}, {cell_lines})"
        )
    if cell_lines > 127:
        raise UserError(f"make-anndata supports at most 127 cell lines, got {cell_lines}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    base = rng.normal(0, 1.0, genes)
    level = rng.normal(0.5, 0.8, genes)
    line_fx = rng.normal(0, 1.0, (cell_lines, genes)) * (rng.random((cell_lines, genes)) < 0.2)
    base = _calibrate(base, line_fx, density, seed)
    plate_fx = rng.normal(0, 0.25, (plates, genes))
    sizes = np.full(plates, cells // plates) + (np.arange(plates) < cells % plates)
    bar = _Progress(cells, progress)
    finals = [plate_path(out_dir, p) for p in range(plates)]
    partials = [f.with_name(f".{f.name}.partial-{os.getpid()}") for f in finals]
    try:
        for p, path in enumerate(partials):
            lines = _plate_lines(rng, int(sizes[p]), cell_lines)
            with h5py.File(path, "w") as f:
                _write_skeleton(f, p, lines, cell_lines, genes)
                x = f.create_group("X")
                _attrs(x, "csr_matrix", "0.1.0", shape=np.array([len(lines), genes]))
                chunk = (1 << 18,)
                data = x.create_dataset("data", (0,), np.float32, maxshape=(None,), chunks=chunk)
                indices = x.create_dataset(
                    "indices", (0,), np.int32, maxshape=(None,), chunks=chunk
                )
                indptr = np.zeros(len(lines) + 1, np.int64)
                for start in range(0, len(lines), chunk_cells):
                    lc = lines[start : start + chunk_cells]
                    logit = base + line_fx[lc] + plate_fx[p] + rng.normal(0, 0.3, (len(lc), 1))
                    hit = rng.random(logit.shape, dtype=np.float32) < 1 / (1 + np.exp(-logit))
                    row, col = np.nonzero(hit)
                    mean = np.exp(level[col] + line_fx[lc[row], col])
                    values = 1 + rng.negative_binomial(NB_SHAPE, NB_SHAPE / (NB_SHAPE + mean))
                    at = data.shape[0]
                    for ds, v in (
                        (data, values.astype(np.float32)),
                        (indices, col.astype(np.int32)),
                    ):
                        ds.resize((at + len(v),))
                        ds[at:] = v
                    indptr[start + 1 : start + len(lc) + 1] = at + np.cumsum(hit.sum(axis=1))
                    bar.update(len(lc))
                _attrs(x.create_dataset("indptr", data=indptr), "array", "0.2.0")
        for partial, final in zip(partials, finals, strict=True):
            os.replace(partial, final)
    finally:
        for partial in partials:
            partial.unlink(missing_ok=True)
    return finals
