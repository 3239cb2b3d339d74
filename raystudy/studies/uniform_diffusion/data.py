"""The uniform_diffusion study's data: a generated Markov chain with an exact likelihood
(the quick and claim profiles), the bytes of Python's own library, or a token folder
(``train.npy``/``val.npy`` rows as ``raystudy data make-tokens`` writes them), and the
driver-side check of that folder before Ray starts."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from raystudy import DataError, MissingDataError, open_npy, require_dir, require_file
from raystudy.algorithms.discrete_diffusion import MarkovSource
from raystudy.studies.uniform_diffusion.config import DataConfig

VAL_SEED = 10_007
"""Seed of the Markov validation sequences: the same for every trial."""
TOKEN_HINT = " (make one with: raystudy data make-tokens OUT --seq-len L)"


@dataclass(frozen=True)
class Corpus:
    """Training batches and fixed validation sequences of one data config; ``source`` is
    the exact Markov chain (None for real text, which has no known likelihood)."""

    vocab_size: int
    seq_len: int
    source: MarkovSource | None
    train_rows: np.ndarray | None
    val: torch.Tensor

    def batch(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """``n`` training sequences (n, L) int64: fresh chain draws, or random rows."""
        if self.source is not None:
            return self.source.sample(n, self.seq_len, generator=generator)
        assert self.train_rows is not None
        rows = torch.randint(len(self.train_rows), (n,), generator=generator).numpy()
        return torch.from_numpy(np.asarray(self.train_rows[np.sort(rows)], dtype=np.int64))


def token_files(path: str) -> tuple[Path, Path]:
    """The folder's train.npy and val.npy, or one line naming what is missing."""
    if not path:
        raise MissingDataError(f"data.source=tokens needs data.path, a folder with train.npy "
                               f"and val.npy{TOKEN_HINT}")
    folder = require_dir(path, "data.path", TOKEN_HINT)
    return (require_file(folder / "train.npy", "token file", TOKEN_HINT),
            require_file(folder / "val.npy", "token file", TOKEN_HINT))


def check_tokens(data: DataConfig) -> None:
    """On the driver: the token folder exists, its rows are long enough, ids fit V."""
    for file in token_files(data.path):
        rows = open_npy(file, "token file")
        if rows.ndim != 2 or rows.shape[1] < data.seq_len:
            raise DataError(f"token file {file}: rows of shape {rows.shape}, need (n, >= "
                            f"{data.seq_len}) for data.seq_len={data.seq_len}")
        top = int(np.max(rows[: min(len(rows), 4096), : data.seq_len]))
        if top >= data.vocab_size:
            raise DataError(f"token file {file}: holds id {top}, outside data.vocab_size="
                            f"{data.vocab_size}; set data.vocab_size={top + 1} or larger")


@functools.lru_cache(maxsize=4)
def corpus_of(data: DataConfig, val_sequences: int) -> Corpus:
    """The corpus of a data config (cached per process: trials of a worker share it)."""
    L = data.seq_len
    if data.source == "markov":
        source = MarkovSource(data.vocab_size, data.order, data.concentration, data.data_seed)
        val = source.sample(val_sequences, L, generator=torch.Generator().manual_seed(VAL_SEED))
        return Corpus(data.vocab_size, L, source, None, val)
    if data.source == "stdlib":
        from raystudy.algorithms.text import text_bytes, train_val_split

        train, held = train_val_split(text_bytes("stdlib", data.max_bytes), 0.1)
        train_rows = _windows(train, L)
        val_rows = _windows(held, L)
    else:
        train_file, val_file = token_files(data.path)
        train_rows = open_npy(train_file, "token file")[:, :L]
        val_rows = open_npy(val_file, "token file")[:, :L]
    picked = np.linspace(0, len(val_rows) - 1, min(val_sequences, len(val_rows))).astype(int)
    val = torch.from_numpy(np.asarray(val_rows[picked], dtype=np.int64))
    return Corpus(data.vocab_size, L, None, train_rows, val)


def _windows(tokens: np.ndarray, seq_len: int) -> np.ndarray:
    n = len(tokens) // seq_len
    if n == 0:
        raise DataError(f"the corpus ({len(tokens)} tokens) is shorter than one sequence")
    return tokens[: n * seq_len].reshape(n, seq_len)
