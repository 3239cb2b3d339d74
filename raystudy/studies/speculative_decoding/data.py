"""The speculative_decoding study's data: the byte domains derived from Python's standard
library (``raystudy.algorithms.speculative.domains``: code, prose, the transliterated
longtail, random bytes), or a folder of JSONL prompts with a ``category`` field; each as
token ids of the trial's models, with every real domain's unigram entropy (the claims'
gate compares the target's bits per token with it)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from raystudy import MissingDataError
from raystudy.algorithms.models.hf import checkpoint_folder, transformers_module
from raystudy.algorithms.speculative import (
    TEXT_DOMAINS,
    domain_data,
    domain_texts,
    random_prompts,
    read_prompt_files,
)
from raystudy.studies.speculative_decoding.config import (
    RANDOM,
    DataConfig,
    SpeculativeConfig,
    check_draft,
    renames,
)

FILE_HINT = (" (a folder of *.jsonl files, one prompt per row: a 'category' string and the "
             "text in 'prompt', 'text' or 'turns')")
Encode = Callable[[bytes], Tensor]
"""Text (UTF-8 bytes) -> the models' token ids ``(n,)`` long."""


def byte_ids(text: bytes) -> Tensor:
    """The byte models' tokens: the bytes themselves, ``(len,)`` long."""
    return torch.frombuffer(bytearray(text), dtype=torch.uint8).long() if text else \
        torch.zeros(0, dtype=torch.long)


@dataclass
class Corpus:
    """What a trial decodes and fits: ``prompts`` by domain (1-D long each), ``train`` (the
    tokens the trained models fit and the pruned vocabulary is counted on) and each real
    domain's unigram entropy in bits."""

    prompts: dict[str, list[Tensor]]
    train: np.ndarray
    unigram_bits: dict[str, float]


def clean(name: str) -> str:
    """A category name usable inside a metric key (letters, digits, ``_`` and ``-``)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "unnamed"


def unigram_bits(tokens: np.ndarray, vocab: int) -> float:
    """The plug-in entropy (bits) of the token frequencies in ``tokens``."""
    counts = np.bincount(np.asarray(tokens, dtype=np.int64).reshape(-1), minlength=vocab)
    p = counts[counts > 0] / max(counts.sum(), 1)
    return float(-(p * np.log2(p)).sum())


@functools.lru_cache(maxsize=2)
def stdlib_texts(train_bytes: int, longtail_fraction: float, held_out_bytes: int
                 ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per text domain ``(train, held_out)`` bytes (cached per process: every trial of a
    worker shares them)."""
    return domain_texts(train_bytes, longtail_fraction=longtail_fraction,
                        held_out_bytes=held_out_bytes)


def mixture(data: DataConfig) -> np.ndarray:
    """The training mixture (uint8): code, prose, then longtail; the same for every seed."""
    texts = stdlib_texts(data.train_bytes, data.longtail_fraction, data.held_out_bytes)
    return np.concatenate([texts[name][0] for name in TEXT_DOMAINS])


def prompt_folder(data: DataConfig) -> dict[str, list[str]]:
    """The file source's prompts by category; one line naming what is missing or bad."""
    if not data.path:
        raise MissingDataError(f"data.source=file needs data.path{FILE_HINT}")
    try:
        return read_prompt_files(data.path)
    except MissingDataError as error:
        raise MissingDataError(f"data.path: {error}") from None


def random_tokens(n: int, length: int, vocab: int, seed: int) -> list[Tensor]:
    """``n`` prompts of ``length`` uniform random tokens (bytes: ``random_prompts``)."""
    rows = (random_prompts(n, length, seed) if vocab == 256 else
            torch.randint(vocab, (n, length), generator=torch.Generator().manual_seed(seed)))
    return list(rows)


def corpus(data: DataConfig, seed: int, encode: Encode, vocab: int, *,
           byte_models: bool) -> Corpus:
    """The trial's prompts, training tokens and unigram entropies. stdlib: held-out windows
    of each domain (``domain_data``'s, drawn from ``seed``), entropies of each domain's
    training bytes; file: a seeded sample of each category, entropies of its prompts'
    tokens, and training tokens from the stdlib mixture (``byte_models``) or the pooled
    prompts. Every source adds ``random`` prompts."""
    prompts: dict[str, list[Tensor]] = {}
    entropy: dict[str, float] = {}
    if data.source == "stdlib":
        texts = stdlib_texts(data.train_bytes, data.longtail_fraction, data.held_out_bytes)
        _, windows = domain_data(seed, train_bytes=data.train_bytes, n_prompts=data.n_prompts,
                                 prompt_len=data.prompt_len,
                                 longtail_fraction=data.longtail_fraction,
                                 held_out_bytes=data.held_out_bytes)
        for name in TEXT_DOMAINS:
            prompts[name] = [encode(bytes(row.to(torch.uint8).tolist())) for row in windows[name]]
            entropy[name] = unigram_bits(encode(texts[name][0].tobytes()).numpy(), vocab)
        train = encode(mixture(data).tobytes()).numpy()
    else:
        names = renames(data)
        rng = np.random.default_rng(seed)
        pooled: dict[str, list[Tensor]] = {}
        for category, texts_of in sorted(prompt_folder(data).items()):
            domain = clean(names.get(category, category))
            chosen = (sorted(rng.choice(len(texts_of), data.n_prompts, replace=False).tolist())
                      if len(texts_of) > data.n_prompts else range(len(texts_of)))
            encoded = [encode(texts_of[i].encode("utf-8")) for i in chosen]
            prompts.setdefault(domain, []).extend(ids[: data.prompt_len] for ids in encoded)
            pooled.setdefault(domain, []).extend(encoded)
        for domain, rows in pooled.items():
            entropy[domain] = unigram_bits(torch.cat(rows).numpy(), vocab)
        train = (byte_ids(mixture(data).tobytes()).numpy() if byte_models else
                 torch.cat([ids for rows in pooled.values() for ids in rows]).numpy())
    prompts[RANDOM] = random_tokens(data.n_prompts, data.prompt_len, vocab, seed)
    return Corpus(prompts, train.astype(np.int64), entropy)


def check_data(config: SpeculativeConfig) -> None:
    """On the driver: the checkpoint folders (config.json) and transformers for
    model.source=hf, the prompt folder's rows for data.source=file; one line otherwise."""
    check_draft(config)
    if config.model.source == "hf":
        checkpoint_folder(config.model.target, "model.target")
        checkpoint_folder(config.model.draft, "model.draft")
        transformers_module("speculative")
    if config.data.source == "file":
        prompt_folder(config.data)
