r"""Generated associative-recall data: Zoology's MQAR and a sparse variant (DLA's premise).

* ``mqar`` (multi-query associative recall; Arora et al. 2023, "Zoology", the semantics of
  ``HazyResearch/zoology`` ``zoology/data/multiquery_ar.py``, re-implemented here): P
  distinct key-value pairs open the sequence (keys from the lower half of the vocabulary,
  token 0 excluded, values from the upper half); each key is asked once later, at query
  slot :math:`2g` of the rest of the sequence, with the gaps g drawn without replacement
  with :math:`p(g) \propto (g+1)^{a-1}` (a = ``power_a``, 0.01: mostly early queries).
  The label at a query key is its value (next-token prediction); every other position is
  unlabelled (-100) and holds a uniformly random token.
* ``mqar_sparse`` (raystudy's, for DLA's "uneven information density"): a small filler
  vocabulary forms stable runs (geometric lengths of mean ``filler_run_mean``, each a 1-3
  token motif repeated), P key-value bigrams sit at uniform places in it, and the last 2P
  positions ask every key once (in random order, each followed by a filler token).

Both return a ``RecallBatch``; one seed gives one batch (offline, deterministic).
Shapes: n sequences, T = ``seq_len``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

FILLER, KEY, VALUE, QUERY = 0, 1, 2, 3
"""Token kinds in ``RecallBatch.kind``."""

IGNORE = -100
"""The label of an unscored position (``torch.nn.functional.cross_entropy``'s default)."""


@dataclass(frozen=True)
class RecallBatch:
    """Sequences and labels of a recall task.

    Attributes:
        inputs: (n, T) long token ids.
        labels: (n, T) long, the value at each query key, -100 elsewhere.
        kind: (n, T) long, FILLER / KEY / VALUE / QUERY per position (mqar's random
            non-query tokens count as FILLER).
        source: (n, T) long, at a query: the position of the key's first occurrence; -1 else.
    """

    inputs: Tensor
    labels: Tensor
    kind: Tensor
    source: Tensor


def mqar(
    n: int,
    seq_len: int,
    vocab_size: int,
    num_kv_pairs: int,
    *,
    power_a: float = 0.01,
    random_non_queries: bool = True,
    seed: int = 0,
) -> RecallBatch:
    """Zoology's multi-query associative recall (module docstring)."""
    P = num_kv_pairs
    _check(n, seq_len, P)
    if vocab_size // 2 - 1 < P or vocab_size - vocab_size // 2 < P:
        raise ValueError(f"vocab_size={vocab_size} is too small for num_kv_pairs={P} distinct "
                         "keys and values")
    if 4 * P > seq_len:
        raise ValueError(f"seq_len={seq_len} must be >= 4 * num_kv_pairs={4 * P}")
    if not power_a > 0:
        raise ValueError(f"power_a={power_a} must be > 0")
    rng = np.random.default_rng(seed)
    half = vocab_size // 2
    slots = (seq_len - 2 * P) // 2                          # query slots after the context
    p = np.arange(1, slots + 1, dtype=np.float64) ** (power_a - 1)
    inputs = np.zeros((n, seq_len), dtype=np.int64)
    labels = np.full((n, seq_len), IGNORE, dtype=np.int64)
    kind = np.full((n, seq_len), FILLER, dtype=np.int64)
    source = np.full((n, seq_len), -1, dtype=np.int64)
    for row in range(n):
        keys = rng.choice(np.arange(1, half), size=P, replace=False)
        values = rng.choice(np.arange(half, vocab_size), size=P, replace=False)
        inputs[row, 0:2 * P:2], inputs[row, 1:2 * P:2] = keys, values
        kind[row, 0:2 * P:2], kind[row, 1:2 * P:2] = KEY, VALUE
        gaps = rng.choice(slots, size=P, replace=False, p=p / p.sum())
        at = 2 * P + 2 * gaps
        inputs[row, at], labels[row, at], kind[row, at] = keys, values, QUERY
        source[row, at] = 2 * np.arange(P)
        if random_non_queries:
            free = kind[row] == FILLER
            inputs[row, free] = rng.integers(vocab_size, size=int(free.sum()))
    return _batch(inputs, labels, kind, source)


def mqar_sparse(
    n: int,
    seq_len: int,
    vocab_size: int,
    num_kv_pairs: int,
    *,
    filler_vocab: int = 8,
    filler_run_mean: float = 8.0,
    seed: int = 0,
) -> RecallBatch:
    """Sparse MQAR: key-value bigrams in stable filler runs, queries at the end.

    Vocabulary: ids [0, filler_vocab) are filler, then (vocab_size - filler_vocab) // 2
    keys, then values. Keys and values of a sequence are distinct.
    """
    P, F = num_kv_pairs, filler_vocab
    _check(n, seq_len, P)
    n_keys = (vocab_size - F) // 2
    if F < 1 or n_keys < P or vocab_size - F - n_keys < P:
        raise ValueError(f"vocab_size={vocab_size} with filler_vocab={F} is too small for "
                         f"num_kv_pairs={P} distinct keys and values")
    if 4 * P > seq_len:
        raise ValueError(f"seq_len={seq_len} must be >= 4 * num_kv_pairs={4 * P}")
    if not filler_run_mean >= 1:
        raise ValueError(f"filler_run_mean={filler_run_mean} must be >= 1")
    rng = np.random.default_rng(seed)
    context = seq_len - 2 * P
    n_fill = context - 2 * P                                # filler tokens in the context
    inputs = np.zeros((n, seq_len), dtype=np.int64)
    labels = np.full((n, seq_len), IGNORE, dtype=np.int64)
    kind = np.full((n, seq_len), FILLER, dtype=np.int64)
    source = np.full((n, seq_len), -1, dtype=np.int64)
    for row in range(n):
        keys = F + rng.choice(n_keys, size=P, replace=False)
        values = F + n_keys + rng.choice(vocab_size - F - n_keys, size=P, replace=False)
        filler = _filler_runs(rng, n_fill + P, F, filler_run_mean)  # P spare for the queries
        is_pair = np.zeros(n_fill + P, dtype=bool)          # items: filler tokens and P bigrams
        is_pair[rng.choice(n_fill + P, size=P, replace=False)] = True
        pos, j, f = 0, 0, 0
        for pair in is_pair:
            if pair:
                inputs[row, pos:pos + 2] = keys[j], values[j]
                kind[row, pos:pos + 2] = KEY, VALUE
                j, pos = j + 1, pos + 2
            else:
                inputs[row, pos] = filler[f]
                f, pos = f + 1, pos + 1
        order = rng.permutation(P)
        first = np.flatnonzero(kind[row] == KEY)
        at = context + 2 * np.arange(P)
        inputs[row, at], labels[row, at], kind[row, at] = keys[order], values[order], QUERY
        source[row, at] = first[order]
        inputs[row, at + 1] = filler[n_fill:n_fill + P]
    return _batch(inputs, labels, kind, source)


def _filler_runs(rng: np.random.Generator, length: int, F: int, mean: float) -> np.ndarray:
    """``length`` filler ids: runs of geometric length (mean ``mean``), each a repeated motif."""
    out: list[int] = []
    while len(out) < length:
        run = int(rng.geometric(1.0 / mean))
        motif = rng.integers(F, size=int(rng.integers(1, 4)))
        out.extend(np.resize(motif, run).tolist())
    return np.asarray(out[:length], dtype=np.int64)


def _check(n: int, seq_len: int, P: int) -> None:
    if n < 1 or seq_len < 1 or P < 1:
        raise ValueError(f"n={n}, seq_len={seq_len} and num_kv_pairs={P} must be >= 1")


def _batch(inputs: np.ndarray, labels: np.ndarray, kind: np.ndarray,
           source: np.ndarray) -> RecallBatch:
    return RecallBatch(*(torch.from_numpy(x) for x in (inputs, labels, kind, source)))
