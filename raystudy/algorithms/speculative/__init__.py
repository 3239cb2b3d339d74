"""Exact speculative decoding and its acceptance measures, for the ``speculative_decoding``
study: raystudy's acceptance-level reading of SPEED-Bench (Abramovich et al., arXiv
2604.09557, ICML 2026) with in-house byte-level models on stdlib-derived domains.

``sampling.py`` (speculative sampling after Leviathan et al. 2023 and Chen et al. 2023:
``verify``, ``speculative_generate``, the autoregressive baseline, the closed forms and
specdec_bench's acceptance statistics, vocabulary pruning), ``drafts.py`` (a byte n-gram
draft, a pruned-vocabulary wrapper), ``selection.py`` (farthest-point diverse subsets) and
``domains.py`` (the byte domains and JSONL prompt files). ``load_causal_lm`` (a local Hugging
Face checkpoint as a model) is :mod:`raystudy.algorithms.models.hf`'s, re-exported.
"""

from ..models.hf import load_causal_lm, load_tokenizer
from .domains import (
    DOMAINS,
    TEXT_DOMAINS,
    domain_data,
    domain_texts,
    encode_bytes,
    prompts_from,
    random_prompts,
    read_prompt_files,
    stdlib_domains,
    transliterate,
)
from .drafts import ByteNGramDraft, PrunedDraft, top_tokens
from .sampling import (
    SpecResult,
    acceptance_rate,
    acceptance_stats,
    autoregressive_generate,
    expected_accept_length,
    keep_mask,
    next_token_logits,
    probabilities,
    prune_vocab,
    sample,
    speculative_generate,
    verify,
)
from .selection import select_diverse

__all__ = ["DOMAINS", "TEXT_DOMAINS", "ByteNGramDraft", "PrunedDraft", "SpecResult",
           "acceptance_rate", "acceptance_stats", "autoregressive_generate", "domain_data",
           "domain_texts", "encode_bytes", "expected_accept_length", "keep_mask",
           "load_causal_lm", "load_tokenizer", "next_token_logits", "probabilities",
           "prompts_from", "prune_vocab", "random_prompts", "read_prompt_files", "sample",
           "select_diverse", "speculative_generate", "stdlib_domains", "top_tokens",
           "transliterate", "verify"]
