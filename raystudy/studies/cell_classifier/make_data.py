"""``raystudy data make-anndata``: a synthetic Tahoe-like h5ad collection for cell_classifier,
with the output folder and its free space checked first."""

from __future__ import annotations

from pathlib import Path

from raystudy.errors import UserError
from raystudy.platform.preflight import check_writable, is_disk_full

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
