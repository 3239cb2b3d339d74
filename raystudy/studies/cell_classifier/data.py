"""``raystudy data make-anndata``: a synthetic Tahoe-like h5ad collection for cell_classifier,
with the output folder and its free space checked first."""

from __future__ import annotations

import argparse
from pathlib import Path

from raystudy import DataCommand, UserError, bounded, check_writable
from raystudy.contract.data import is_disk_full

MB = 1024**2


def make_anndata(out_dir: str, cells: int, genes: int, plates: int, density: float,
                 seed: int = 0) -> list[Path]:
    """A synthetic Tahoe-like collection, one .h5ad per plate (see algorithms.sampling)."""
    from raystudy.algorithms.sampling import make_anndata_collection

    # float32 counts + int32 column indices per non-zero, int64 indptr, obs: 10% margin.
    estimate = int(1.1 * (cells * genes * density * 8 + cells * 24)) + 4 * MB * plates
    check_writable(out_dir, "make-anndata output folder", need_bytes=estimate)
    try:
        return make_anndata_collection(out_dir, cells, genes, plates, density, seed=seed,
                                       progress=True)
    except (OSError, RuntimeError) as exc:
        if not is_disk_full(exc):
            raise
        raise UserError(f"make-anndata output folder {out_dir}: no space left on device "
                        f"(the collection needs about {estimate / MB:.0f} MB)") from None


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir")
    parser.add_argument("--cells", type=bounded(int, 1), required=True, help="total cells")
    parser.add_argument("--genes", type=bounded(int, 1), required=True, help="genes per cell")
    parser.add_argument("--plates", type=bounded(int, 1), default=8,
                        help="plate files (default 8)")
    parser.add_argument("--density", type=bounded(float, 1e-9, 1.0), default=0.1,
                        help="fraction of non-zero counts, in (0, 1] (default 0.1)")
    parser.add_argument("--seed", type=bounded(int, 0), default=0)


def _run(args: argparse.Namespace) -> str:
    files = make_anndata(args.out_dir, args.cells, args.genes, args.plates, args.density,
                         args.seed)
    return f"wrote {len(files)} files to {args.out_dir}"


DATA_COMMANDS = (DataCommand("make-anndata", "write a synthetic Tahoe-like collection, one "
                             ".h5ad per plate", _arguments, _run),)
