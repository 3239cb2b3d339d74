"""``raystudy data ...``: make datasets the studies read, with clear errors."""

from __future__ import annotations

from pathlib import Path

from raystudy.errors import DataError


def make_token_dataset(out_dir: str, source: str, seq_len: int, max_bytes: int) -> Path:
    """Byte-tokenize local text files into ``train.npy``/``val.npy`` (see algorithms.text)."""
    from raystudy.algorithms.text import text_bytes, write_token_files

    if seq_len < 2 or max_bytes < 10 * seq_len:
        raise DataError("make-tokens needs --seq-len >= 2 and --max-bytes >= 10 * seq-len")
    try:
        tokens = text_bytes(source, max_bytes)
        return write_token_files(out_dir, tokens, seq_len)
    except (FileNotFoundError, ValueError) as exc:
        raise DataError(str(exc)) from None


def make_anndata(out_dir: str, cells: int, genes: int, plates: int, density: float,
                 seed: int = 0) -> list[Path]:
    """A synthetic Tahoe-like collection, one .h5ad per plate (see algorithms.sampling)."""
    from raystudy.algorithms.sampling import make_anndata_collection

    return make_anndata_collection(out_dir, cells, genes, plates, density, seed=seed,
                                   progress=True)
