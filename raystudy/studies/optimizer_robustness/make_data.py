"""``raystudy data make-tokens``: byte tokens for optimizer_robustness, written with clear errors
(the output folder is checked first; temporaries are removed when a write fails)."""

from __future__ import annotations

from pathlib import Path

from raystudy.errors import DataError, UserError
from raystudy.platform.preflight import check_writable

MB = 1024**2


def make_token_dataset(out_dir: str, source: str, seq_len: int, max_bytes: int) -> Path:
    """Byte-tokenize local text files into ``train.npy``/``val.npy`` (see algorithms.text)."""
    from raystudy.algorithms.text import text_bytes, write_token_files

    if seq_len < 2 or max_bytes < 10 * seq_len:
        raise DataError("make-tokens needs --seq-len >= 2 and --max-bytes >= 10 * seq-len")
    try:
        tokens = text_bytes(source, max_bytes)
    except (FileNotFoundError, ValueError) as exc:
        raise DataError(str(exc)) from None
    check_writable(out_dir, "make-tokens output folder", need_bytes=2 * tokens.size + MB)
    try:
        return write_token_files(out_dir, tokens, seq_len)
    except ValueError as exc:
        raise DataError(str(exc)) from None
    except OSError as exc:
        if exc.errno is not None or "written" not in str(exc):
            raise
        raise UserError(f"make-tokens output folder {out_dir}: no space left on device "
                        f"({exc})") from None
