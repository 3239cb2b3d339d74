"""The uniform_diffusion study's data: a generated Markov chain with an exact likelihood
(the quick and claim profiles), the bytes of Python's own library, or a token folder
(``train.npy``/``val.npy`` rows as ``raystudy data make-tokens`` writes them), and the
driver-side check of that folder before Ray starts."""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from raystudy import (
    DataCommand,
    DataError,
    MissingDataError,
    bounded,
    open_npy,
    require_dir,
    require_file,
)
from raystudy.studies.uniform_diffusion.config import DataConfig

if TYPE_CHECKING:  # torch is imported where it is used: `raystudy data` reads this module
    import torch

    from raystudy.algorithms.discrete_diffusion import MarkovSource

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
        import torch

        rows = torch.randint(len(self.train_rows), (n,), generator=generator).numpy()
        return torch.from_numpy(np.asarray(self.train_rows[np.sort(rows)], dtype=np.int64))


def token_files(path: str, what: str = "data.path") -> tuple[Path, Path]:
    """The folder's train.npy and val.npy, or one line naming what is missing (``what``:
    how the user gave the folder)."""
    if not path:
        raise MissingDataError(f"data.source=tokens needs data.path, a folder with train.npy "
                               f"and val.npy{TOKEN_HINT}")
    folder = require_dir(path, what, TOKEN_HINT)
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
    import torch

    from raystudy.algorithms.discrete_diffusion import MarkovSource

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


# ----------------------------------------------------------------------------- commands
def _evaluator_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tokens", help="a token folder with train.npy and val.npy")
    parser.add_argument("--seq-len", type=bounded(int, 2), required=True,
                        help="the study's data.seq_len (rows are cut to it)")
    parser.add_argument("--vocab-size", type=bounded(int, 2), default=0,
                        help="the study's data.vocab_size (default: the largest id + 1)")
    parser.add_argument("--out", default="",
                        help="the file to write (default TOKENS/ar_evaluator_L{seq_len}.pt)")
    parser.add_argument("--steps", type=bounded(int, 1), default=2000)
    parser.add_argument("--d-model", type=bounded(int, 8), default=128)
    parser.add_argument("--layers", type=bounded(int, 1), default=4)
    parser.add_argument("--heads", type=bounded(int, 1), default=4)
    parser.add_argument("--batch-size", type=bounded(int, 1), default=64)
    parser.add_argument("--lr", type=bounded(float, 0), default=1e-3)
    parser.add_argument("--seed", type=int, default=0)


def train_evaluator(tokens: str, seq_len: int, out: str = "", **options: Any
                    ) -> tuple[Path, dict[str, Any]]:
    """The AR evaluator of a token folder (``evaluator.train_ar_evaluator``'s options),
    written to ``out`` (default ``TOKENS/ar_evaluator_L{seq_len}.pt``): its file, metadata."""
    from raystudy.studies.uniform_diffusion.evaluator import train_ar_evaluator

    train_file, val_file = token_files(tokens, "the token folder")
    rows = [open_npy(file, "token file") for file in (train_file, val_file)]
    for array, file in zip(rows, (train_file, val_file), strict=True):
        if array.ndim != 2 or array.shape[1] < seq_len:
            raise DataError(f"token file {file}: rows of shape {array.shape}, need (n, >= "
                            f"{seq_len}) for --seq-len {seq_len}")
    target = Path(out) if out else Path(tokens) / f"ar_evaluator_L{seq_len}.pt"
    return target, train_ar_evaluator(*rows, seq_len, target, tokens=str(tokens), **options)


def _train_evaluator(args: argparse.Namespace) -> str:
    if args.d_model % args.heads:
        raise DataError(f"--d-model {args.d_model} must be a multiple of --heads {args.heads}")
    file, meta = train_evaluator(args.tokens, args.seq_len, args.out, steps=args.steps,
                                 d_model=args.d_model, n_layers=args.layers,
                                 n_heads=args.heads, batch_size=args.batch_size, lr=args.lr,
                                 seed=args.seed, vocab_size=args.vocab_size,
                                 log_every=max(1, args.steps // 10))
    return (f"wrote the AR evaluator {file} (GPT {meta['d_model']} x {meta['n_layers']}, "
            f"{meta['steps']} steps): validation PPL {meta['val_ppl']:.2f} "
            f"(NLL {meta['val_nll']:.3f} nats/token); use it with --set "
            f"eval.ar_evaluator={file}")


DATA_COMMANDS = (DataCommand("train-ar-evaluator", "train uniform_diffusion's AR evaluator "
                             "(Gen PPL on token files, in place of GPT-2 Large)",
                             _evaluator_arguments, _train_evaluator),)
