"""Exact speculative decoding's acceptance length by domain, on real vs random prompts, with
diverse prompt subsets and a pruned draft vocabulary.

Paper: Abramovich, Ashkenazi, Putterman, Chislett, Mitra, Darvish Rouhani, Zilberstein,
Geifman (NVIDIA), "SPEED-Bench: a unified and diverse benchmark for speculative decoding"
(arXiv 2604.09557, ICML 2026). Claims tested here, at the acceptance level: code accepts
longer than prose; random-token prompts give another acceptance length than real ones; a
semantically diverse prompt subset estimates the benchmark better than a random or
low-diversity one; pruning the draft's vocabulary costs the long tail more. The serving
claims (throughput against concurrency, batch-dependent draft lengths, MTP heads against
EAGLE3) are "not run" rows. The models are **in-house byte-level GPTs** and the domains
**raystudy's stand-ins derived from Python's standard library** (``random``: uniform random
bytes, ``longtail``: prose transliterated into Cyrillic and Greek), not SPEED-Bench's
prompts, which cannot be built offline. The method is exact speculative sampling
(Leviathan et al. 2023; Chen et al. 2023), ``raystudy.algorithms.speculative``.

Launch::

    raystudy sweep speculative_decoding --profile quick                  # 12 trials, 2 CPUs
    raystudy sweep speculative_decoding --profile quick --space claim    # 8 seeds
    raystudy run speculative_decoding --in-process --set draft.kind=ngram --set decode.gamma=2
    raystudy sweep speculative_decoding --profile paper --gpus-per-worker 1 \\
        --set model.target=TARGET_DIR --set model.draft=DRAFT_DIR --set data.path=PROMPT_DIR

A trial = (draft kind, gamma, seed): the target GPT and, for ``draft.kind=gpt``, the draft
GPT trained on the training mixture (once per seed and worker, a per-process cache; the
n-gram is refitted), then one cadence step per domain, its held-out prompts decoded by SD
over prompt chunks with ``ctx.map_chunks``; the last steps decode ``prune.domains`` with
the draft pruned to the ``prune.vocab`` most frequent training bytes. Every prompt is also
decoded greedily by SD and by the target alone (``greedy_mismatches``: exactness, the
claims' gate). Each report checkpoints the GPTs' weights and the prompts decoded, so a
resumed trial neither retrains nor re-decodes. The metrics: docs/speculative_decoding.md.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from raystudy import ConfigError, DataError, Metric, Study, TrialContext
from raystudy.algorithms.models import GPT
from raystudy.algorithms.speculative import (
    ByteNGramDraft,
    PrunedDraft,
    acceptance_stats,
    autoregressive_generate,
    load_causal_lm,
    load_tokenizer,
    speculative_generate,
    top_tokens,
)
from raystudy.algorithms.text import random_windows
from raystudy.studies.speculative_decoding.analysis import analyze
from raystudy.studies.speculative_decoding.config import (
    RANDOM,
    DataConfig,
    ModelConfig,
    SpeculativeConfig,
    TrainConfig,
    check_draft,
)
from raystudy.studies.speculative_decoding.data import (
    Corpus,
    Encode,
    byte_ids,
    check_data,
    corpus,
    mixture,
)
from raystudy.studies.speculative_decoding.subsets import histograms, subset_errors


# ----------------------------------------------------------------------------- models
def lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    """Linear warmup to ``peak``, then cosine decay to ``peak / 10`` at ``total``."""
    if step <= warmup:
        return peak * step / max(warmup, 1)
    progress = (step - warmup) / max(total - warmup, 1)
    return peak * (0.1 + 0.45 * (1 + math.cos(math.pi * min(progress, 1.0))))


def build_gpt(model: ModelConfig, role: str) -> GPT:
    """The target's or the draft's byte GPT, untrained."""
    if role == "target":
        return GPT(256, model.seq_len, model.d_model, model.n_layers, model.n_heads)
    return GPT(256, model.seq_len, model.draft_d_model, model.draft_n_layers, model.draft_n_heads)


def train_gpt(gpt: GPT, tokens: np.ndarray, steps: int, train: TrainConfig, seed: int,
              device: torch.device) -> float:
    """AdamW on random windows of ``tokens``; returns the mean loss (nats per byte) of the
    last ten steps (NaN without steps)."""
    gpt.to(device).train()
    optimizer = torch.optim.AdamW(gpt.parameters(), lr=train.lr)
    generator = torch.Generator().manual_seed(seed)
    losses: list[float] = []
    for step in range(1, steps + 1):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, steps, train.lr, train.warmup)
        x, y = random_windows(tokens, train.batch_size, gpt.seq_len, generator)
        loss = F.cross_entropy(gpt(x.to(device)).flatten(0, 1), y.to(device).flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    gpt.eval()
    return float(np.mean(losses[-10:])) if losses else math.nan


@functools.lru_cache(maxsize=16)
def trained_gpt(role: str, model: ModelConfig, train: TrainConfig, data: DataConfig, seed: int,
                device: str) -> tuple[GPT, dict[str, float]]:
    """The seed's trained target or draft GPT and its training metrics, trained once per
    worker: every trial of the seed on this worker shares it (read-only)."""
    torch.manual_seed(2 * seed + (role == "draft"))
    gpt = build_gpt(model, role)
    started = time.process_time()
    steps = train.steps if role == "target" else train.draft_steps
    loss = train_gpt(gpt, mixture(data), steps, train, 2 * seed + (role == "draft"),
                     torch.device(device))
    return gpt, {f"train/{role}_loss": loss,
                 f"train/{role}_seconds": time.process_time() - started}


@dataclass
class Models:
    """The trial's target and full-vocabulary draft, how text becomes their tokens, the
    vocabulary size, the trained GPTs' weights (the checkpoint's) and training metrics."""

    target: nn.Module
    draft: nn.Module
    encode: Encode
    vocab: int
    weights: dict[str, Any]
    metrics: dict[str, float]


def tokenize(tokenizer: Any, text: bytes) -> Tensor:
    """A Hugging Face tokenizer's ids for ``text`` (UTF-8, undecodable bytes dropped)."""
    ids = tokenizer(text.decode("utf-8", "ignore"))["input_ids"]
    return torch.tensor(ids, dtype=torch.long)


def load_models(config: SpeculativeConfig, state: dict[str, Any], device: torch.device
                ) -> Models:
    """hf: the two checkpoints and the target's tokenizer; trained: the GPTs from the
    checkpoint's weights, else from this worker's cache or trained now, and the n-gram."""
    m = config.model
    check_draft(config)
    if m.source == "hf":
        target = load_causal_lm(m.target, dtype=m.dtype).to(device)
        draft = load_causal_lm(m.draft, dtype=m.dtype).to(device)
        if draft.vocab_size != target.vocab_size:
            raise DataError(f"model.draft has {draft.vocab_size} tokens, model.target "
                            f"{target.vocab_size}: SD needs one vocabulary")
        encode = functools.partial(tokenize, load_tokenizer(m.target))
        return Models(target, draft, encode, target.vocab_size, {}, {})
    roles = ("target", "draft") if config.draft.kind == "gpt" else ("target",)
    gpts: dict[str, nn.Module] = {}
    metrics = dict(state.get("train", {}))
    for role in roles:
        if role in state.get("models", {}):
            gpts[role] = build_gpt(m, role)
            gpts[role].load_state_dict(state["models"][role])
            gpts[role].to(device).eval()
        else:
            gpts[role], info = trained_gpt(role, m, config.train, config.data,
                                           config.run.seed, str(device))
            metrics |= info
    if "draft" in gpts:
        draft = gpts["draft"]
    else:
        draft = ByteNGramDraft(config.draft.order, k=config.draft.k).fit(
            mixture(config.data)).to(device)
    return Models(gpts["target"], draft, byte_ids, 256,
                  {role: gpt.state_dict() for role, gpt in gpts.items()}, metrics)


# ----------------------------------------------------------------------------- decoding
@dataclass(frozen=True)
class Settings:
    """How every prompt of one cadence step is decoded."""

    gamma: int
    new_tokens: int
    temperature: float
    check_greedy: bool
    threads: int
    device: str


def clock(device: str) -> float:
    """Process CPU time on cpu; wall time after a synchronisation on cuda."""
    if device == "cuda":
        torch.cuda.synchronize()
        return time.perf_counter()
    return time.process_time()


def decode_prompt(target: nn.Module, draft: nn.Module, s: Settings, prompt: Tensor,
                  seed: int) -> dict[str, Any]:
    """One prompt: SD at the trial's temperature (drafts accepted per target call, calls,
    seconds) and, with ``check_greedy``, whether greedy SD differs from the target's greedy
    decoding (1), agrees (0) or was not checked (-1)."""
    prompt = prompt.to(s.device)
    started = clock(s.device)
    out = speculative_generate(target, draft, prompt, s.new_tokens, gamma=s.gamma,
                               temperature=s.temperature,
                               generator=torch.Generator().manual_seed(seed))
    seconds = clock(s.device) - started
    mismatch = -1
    if s.check_greedy:
        greedy = speculative_generate(target, draft, prompt, s.new_tokens, gamma=s.gamma,
                                      temperature=0)
        reference = autoregressive_generate(target, prompt, s.new_tokens, temperature=0)
        mismatch = int(not torch.equal(greedy.tokens, reference))
    return {"accepted": list(out.accepted), "target_calls": out.target_calls,
            "draft_calls": out.draft_calls, "tokens": s.new_tokens, "seconds": seconds,
            "mismatch": mismatch}


def decode_chunk(items: list[tuple[nn.Module, nn.Module, Settings, Tensor, int]]
                 ) -> list[dict[str, Any]]:
    """``decode_prompt`` over one chunk of prompts (run by ``ctx.map_chunks``, anywhere)."""
    if items:
        torch.set_num_threads(items[0][2].threads)
    return [decode_prompt(*item) for item in items]


@torch.no_grad()
def bits_per_token(model: nn.Module, prompts: list[Tensor], device: torch.device) -> float:
    """The model's mean next-token cross-entropy (bits) over the prompts' tokens (bits per
    byte for the byte models), each prompt cut to its first ``seq_len`` tokens."""
    nats, count = 0.0, 0
    for prompt in prompts:
        ids = prompt[: getattr(model, "seq_len", 0) or len(prompt)].to(device)
        if len(ids) >= 2:
            logits = model(ids[None])[0, :-1].float()
            nats += F.cross_entropy(logits, ids[1:], reduction="sum").item()
            count += len(ids) - 1
    return nats / count / math.log(2) if count else math.nan


# ----------------------------------------------------------------------------- metrics
def prompt_al(results: list[dict[str, Any]]) -> np.ndarray:
    """Each prompt's acceptance length: the mean of accepted + 1 over its target calls."""
    return np.array([np.mean(r["accepted"]) + 1 for r in results])


def domain_metrics(results: list[dict[str, Any]], gamma: int, prefix: str) -> dict[str, float]:
    """One domain's acceptance measures (``acceptance_stats`` of the untruncated step
    lengths, accepted + 1, pooled over prompts), AL as the mean of the prompts' ALs, calls
    and seconds per token, and the greedy mismatches where checked."""
    stats = acceptance_stats([a + 1 for r in results for a in r["accepted"]], gamma)
    tokens = sum(r["tokens"] for r in results)
    out = {prefix + "al": float(prompt_al(results).mean()), prefix + "al_pooled": stats["al"],
           prefix + "prompts": float(len(results)),
           prefix + "target_calls_per_token": sum(r["target_calls"] for r in results) / tokens,
           prefix + "draft_calls_per_token": sum(r["draft_calls"] for r in results) / tokens,
           prefix + "seconds_per_token": sum(r["seconds"] for r in results) / tokens}
    for k, (conditional, joint) in enumerate(zip(stats["conditional"], stats["joint"],
                                                 strict=True), start=1):
        if math.isfinite(conditional):
            out[f"{prefix}conditional_{k}"] = conditional
        out[f"{prefix}joint_{k}"] = joint
    out |= {f"{prefix}steps_{n}": float(c) for n, c in enumerate(stats["histogram"], start=1)}
    checked = [r["mismatch"] for r in results if r["mismatch"] >= 0]
    if checked:
        out[prefix + "greedy_mismatches"] = float(sum(checked))
    return out


def static_metrics(config: SpeculativeConfig, models: Models, data: Corpus,
                   keep: Tensor | None, device: torch.device) -> dict[str, float]:
    """What does not change over the trial: the target's bits per token and the unigram
    entropy per domain, the kept vocabulary's share of each domain's prompt tokens, sizes
    and the training metrics."""
    out = dict(models.metrics)
    for domain, prompts in data.prompts.items():
        out[f"eval/{domain}/bits_per_token"] = bits_per_token(models.target, prompts, device)
        if domain in data.unigram_bits:
            out[f"data/{domain}/unigram_bits"] = data.unigram_bits[domain]
        if keep is not None:
            ids = torch.cat(prompts).cpu()
            out[f"data/{domain}/kept_share"] = float(torch.isin(ids, keep).float().mean())
    out |= {"data/vocab": float(models.vocab), "data/prune_vocab": float(config.prune.vocab)}
    return out


def metrics_of(config: SpeculativeConfig, done: dict[str, list[dict[str, Any]]],
               static: dict[str, float], data: Corpus, vocab: int) -> dict[str, float]:
    """The trial's metrics over the steps done; the real-domain AL and S3's subset errors
    once every real domain is decoded."""
    out = dict(static)
    for key, results in done.items():
        out |= domain_metrics(results, config.decode.gamma, key + "/")
    real = [d for d in data.prompts if d != RANDOM]
    if real and all(f"eval/{d}" in done for d in real):
        out["eval/al_real"] = float(np.mean([out[f"eval/{d}/al"] for d in real]))
        al = np.concatenate([prompt_al(done[f"eval/{d}"]) for d in real])
        domains = np.concatenate([np.full(len(done[f"eval/{d}"]), i) for i, d in enumerate(real)])
        embeddings = histograms([p for d in real for p in data.prompts[d]], vocab)
        s = config.subset
        out |= {f"subset/{name}/abs_error": error for name, error in subset_errors(
            al, domains, embeddings, s.fraction, s.draws, config.run.seed).items()}
        out |= {"subset/size": float(max(1, round(s.fraction * len(al)))),
                "subset/pool": float(len(al))}
    checked = [v for k, v in out.items() if k.startswith("eval/")
               and k.endswith("/greedy_mismatches")]
    if checked:
        out["eval/greedy_mismatches"] = float(sum(checked))
    return out


# ----------------------------------------------------------------------------- loop
def plan(config: SpeculativeConfig, data: Corpus) -> list[str]:
    """The cadence's steps: ``eval/DOMAIN`` for every domain, then ``pruned/DOMAIN`` for
    each of prune.domains the corpus has (none at prune.vocab = 0)."""
    steps = [f"eval/{d}" for d in data.prompts]
    if config.prune.vocab:
        steps += [f"pruned/{d}" for d in config.prune.domains if d in data.prompts]
    return steps


def device_of(config: SpeculativeConfig) -> torch.device:
    """run.device, checked on the trial's node (one line where CUDA is missing)."""
    if config.run.device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("run.device=cuda, but this node has no CUDA device")
    return torch.device(config.run.device)


def train_loop(config: SpeculativeConfig, ctx: TrialContext) -> None:
    torch.set_num_threads(config.run.threads)
    device = device_of(config)
    state = ctx.load_checkpoint() or {}
    models = load_models(config, state, device)
    data = corpus(config.data, config.run.seed, models.encode, models.vocab,
                  byte_models=config.model.source == "trained")
    if config.prune.vocab > models.vocab:
        raise ConfigError(f"prune.vocab={config.prune.vocab} exceeds the models' "
                          f"{models.vocab} tokens")
    keep = top_tokens(data.train, config.prune.vocab, models.vocab) if config.prune.vocab \
        else None
    static = static_metrics(config, models, data, keep, device)
    steps = plan(config, data)
    done: dict[str, list[dict[str, Any]]] = dict(state.get("units", {}))
    domains = list(data.prompts)
    d = config.decode
    cadence = ctx.cadence(len(steps), 1, 1)
    for step in cadence:
        key = steps[step - 1]
        condition, domain = key.split("/", 1)
        draft = (models.draft if condition == "eval" or keep is None
                 else PrunedDraft(models.draft, keep, models.vocab))
        settings = Settings(d.gamma, d.new_tokens, d.temperature,
                            d.check_greedy and condition == "eval", config.run.threads,
                            device.type)
        first = 1_000_003 * config.run.seed + 10_007 * domains.index(domain)
        done[key] = ctx.map_chunks(decode_chunk, [
            (models.target, draft, settings, prompt, first + i)
            for i, prompt in enumerate(data.prompts[domain])])
        checkpoint = {"units": done, "train": models.metrics}
        if models.weights:
            checkpoint["models"] = models.weights
        ctx.report(metrics_of(config, done, static, data, models.vocab),
                   checkpoint=checkpoint if cadence.checkpoints(step) else None, step=step)


STUDY = Study(
    name="speculative_decoding",
    description="acceptance length of exact speculative sampling by domain, on real vs random "
                "prompts, diverse prompt subsets and pruned draft vocabularies (SPEED-Bench's "
                "data-dependence claims), with in-house byte-level GPTs on stdlib-derived "
                "domains",
    config_cls=SpeculativeConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/al_real", "max", "acceptance length (tokens per target call) averaged "
               "over the real domains"),
        Metric("eval/greedy_mismatches", "min", "prompts whose greedy SD output differs from "
               "the target's greedy decoding (exactness: must be 0)"),
        Metric("eval/code/al", "max", "acceptance length on code prompts"),
        Metric("eval/prose/al", "max", "acceptance length on prose prompts"),
        Metric("eval/longtail/al", "max", "acceptance length on longtail prompts"),
        Metric("eval/random/al", "max", "acceptance length on random-token prompts"),
        Metric("subset/diverse/abs_error", "min", "mean |per-domain AL of a diverse 10 % "
               "subset - the pool's|"),
    ),
    analyze=analyze,
    check_data=check_data,
    supports_workers=False,
)
