"""``raystudy data make-tokens``: byte tokens for optimizer_robustness, written with clear errors
(the output folder is checked first; temporaries are removed when a write fails)."""

from __future__ import annotations

import argparse
from pathlib import Path

from raystudy import DataCommand, DataError, UserError, bounded, check_writable

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


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir")
    parser.add_argument("--source", default="stdlib",
                        help="'stdlib' (Python's own sources) or a folder of text files")
    parser.add_argument("--seq-len", type=bounded(int, 2), default=128)
    parser.add_argument("--max-bytes", type=bounded(int, 1), default=20_000_000)


def _run(args: argparse.Namespace) -> str:
    return f"wrote {make_token_dataset(args.out_dir, args.source, args.seq_len, args.max_bytes)}"


DATA_COMMANDS = (DataCommand("make-tokens", "tokenize local text files into train/val .npy "
                             "sequences", _arguments, _run),)
