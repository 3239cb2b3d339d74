"""Byte-level text corpora that every machine has offline, and token sequence files.

The quick profile of the optimizer study trains on the bytes of the Python standard
library's own ``.py`` sources (sorted by path, so the corpus is the same on every
machine with the same Python). Token files for larger runs are ``.npy`` arrays of
shape ``n_sequences x (seq_len + 1)`` (dtype uint16): each row is one input sequence
plus its next-token target, the format ``write_token_files`` writes and the study
reads with Ray Data (local disk, NFS or object storage).
"""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch


def text_bytes(source: str = "stdlib", max_bytes: int = 2_000_000) -> np.ndarray:
    """Concatenated bytes (uint8) of ``.py``/``.txt``/``.md`` files, in sorted path order.

    ``source`` is ``"stdlib"`` (Python's own library folder, ``site-packages`` left out) or
    a folder of text files. The walk stops at ``max_bytes``: only what is read is listed.
    """
    root = Path(sysconfig.get_paths()["stdlib"]) if source == "stdlib" else Path(source)
    if not root.is_dir():
        raise FileNotFoundError(f"text source folder not found: {root}")
    suffixes = (".py",) if source == "stdlib" else (".py", ".txt", ".md")
    chunks, total = [], 0
    for path in _sorted_files(root, suffixes):
        data = path.read_bytes()
        chunks.append(data[: max_bytes - total])
        total += len(chunks[-1])
        if total >= max_bytes:
            break
    if total == 0:
        raise FileNotFoundError(f"no text files under {root}")
    return np.frombuffer(b"".join(chunks), dtype=np.uint8).copy()


def _sorted_files(folder: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    """Files under ``folder`` ending in ``suffixes``, lazily, in ``sorted(Path)`` order
    (part by part: ``a/b/x.py`` before ``a/b.py``), ``site-packages`` pruned."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_dir():
            if entry.name != "site-packages":
                yield from _sorted_files(Path(entry.path), suffixes)
        elif entry.name.endswith(suffixes) and entry.is_file():
            yield Path(entry.path)


def train_val_split(tokens: np.ndarray, val_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous split: the last ``val_fraction`` of the corpus is validation."""
    cut = int(len(tokens) * (1.0 - val_fraction))
    return tokens[:cut], tokens[cut:]


def random_windows(
    tokens: np.ndarray, batch_size: int, seq_len: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` random windows: inputs ``x`` and next-token targets ``y`` (B x T)."""
    starts = torch.randint(0, len(tokens) - seq_len - 1, (batch_size,), generator=generator)
    rows = np.stack([tokens[s : s + seq_len + 1] for s in starts.tolist()]).astype(np.int64)
    rows = torch.from_numpy(rows)
    return rows[:, :-1], rows[:, 1:]


def write_token_files(
    out_dir: str | os.PathLike, tokens: np.ndarray, seq_len: int, val_fraction: float = 0.1
) -> Path:
    """Cut ``tokens`` into rows of ``seq_len + 1`` and write ``train.npy`` / ``val.npy``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, part in zip(("train", "val"), train_val_split(tokens, val_fraction), strict=True):
        n_rows = len(part) // (seq_len + 1)
        if n_rows == 0:
            raise ValueError(f"corpus too small for seq_len={seq_len}")
        rows = part[: n_rows * (seq_len + 1)].reshape(n_rows, seq_len + 1).astype(np.uint16)
        tmp = out / f".{name}.npy.tmp"
        try:
            with open(tmp, "wb") as handle:
                np.save(handle, rows)
            os.replace(tmp, out / f"{name}.npy")
        finally:
            tmp.unlink(missing_ok=True)  # a failed write (a full disk) leaves nothing behind
    return out
