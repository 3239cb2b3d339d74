"""Probes of a language model on the generated world, through the KairosQA rules.

A model enters only as a ``Scorer``: given (context, continuation) string pairs, the
summed negative log-likelihood (nats) of each continuation; and, for the generative
probe, a ``Generator``: context -> greedy continuation. ``gpt_scorer`` / ``gpt_generator``
wrap a byte-level GPT; tests pass oracles (a lookup of the world, "always the latest
value", constant logits) through the same pipeline.

* dated cloze (temporal precision): the world written as KairosQA records
  (``world_records``), choices by ``kairos.build_choices``, context ``"\\nIn {y}, the {r}
  of {e} was"``, continuation ``" {value}."``; accuracy under both normalisations, and the
  year error ``|year of the chosen choice - y|`` (a year -1 distractor counts T - 1);
* undated freshness: ``"\\nThe {r} of {e} is"`` over all of the pair's values; the share
  choosing the final year's value;
* invariant accuracy: ``"\\n{e} is in"`` over all places;
* generative: greedy bytes up to ``"."``, exact match and token F1 against year y's value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .corpus import dated, located, undated
from .kairos import Norm, build_choices, cloze_prediction, exact_match, f1_score
from .world import World

Scorer = Callable[[Sequence[tuple[str, str]]], np.ndarray]
Generator = Callable[[str], str]


def world_records(world: World, n_llm: int = 3, seed: int = 0) -> list[dict[str, Any]]:
    """The world's kept pairs in KairosQA's schema: ``question`` with ``{year}``, one
    ``[[value], year]`` per year, and ``n_llm`` vocabulary values the pair never held as
    the year -1 (LLM) distractors."""
    rng = np.random.default_rng([seed, 31])
    out = []
    for e, r in world.kept:
        held = {world.value(e, r, y) for y in world.years}
        spare = [v for v in world.vocab[r] if v not in held]
        llm = [spare[j] for j in rng.permutation(len(spare))[:n_llm]]
        answers: list[list[Any]] = [[[world.value(e, r, y)], y] for y in world.years]
        out.append({"question": dated(world, e, r, 0).replace(" 0,", " {year},"),
                    "multi_choice_answers": [*answers, [llm, -1]] if llm else answers,
                    "subject": world.entities[e], "relation": world.relations[r],
                    "subject_rank": float(world.popularity[e])})
    return out


@dataclass(frozen=True)
class DatedResult:
    acc: dict[int, float]
    """year -> accuracy (character normalisation)."""
    acc_none: dict[int, float]
    year_error: float
    chance: float


def dated_probe(records: Sequence[dict[str, Any]], years: Sequence[int], scorer: Scorer,
                n_choices: int = 4, suffix: str = ".", prefix: str = "\n") -> DatedResult:
    """Per-year cloze accuracy of ``scorer`` on KairosQA ``records`` (0-shot)."""
    acc: dict[int, float] = {}
    acc_none: dict[int, float] = {}
    errors, chance = [], []
    span = max(years) - min(years)
    for y in years:
        items = list(build_choices(records, y, n_choices))
        if not items:
            continue
        pairs = [(prefix + it["question"], f" {c}{suffix}") for it in items for c in it["choices"]]
        nll = scorer(pairs)
        right = {"character": 0, "none": 0}
        k = 0
        for it in items:
            conts = [f" {c}{suffix}" for c in it["choices"]]
            block = nll[k:k + len(conts)]
            k += len(conts)
            norm: Norm
            for norm in ("character", "none"):
                pred = cloze_prediction(block, conts, norm)
                right[norm] += int(pred == it["gold"])
                if norm == "character":
                    chosen = it["choice_years"][pred]
                    errors.append(span if chosen == -1 else abs(chosen - y))
            chance.append(1.0 / len(conts))
        acc[y] = right["character"] / len(items)
        acc_none[y] = right["none"] / len(items)
    return DatedResult(acc, acc_none, float(np.mean(errors)) if errors else float("nan"),
                       float(np.mean(chance)) if chance else float("nan"))


def freshness_probe(world: World, scorer: Scorer) -> float:
    """Share of undated probes whose chosen value is the final year's."""
    pairs, blocks = [], []
    for e, r in world.kept:
        values = list(dict.fromkeys(world.value(e, r, y) for y in world.years))
        blocks.append((values, world.latest(e, r)))
        pairs += [("\n" + undated(world, e, r), f" {v}.") for v in values]
    nll = scorer(pairs)
    k, fresh = 0, 0
    for values, latest in blocks:
        conts = [f" {v}." for v in values]
        pred = cloze_prediction(nll[k:k + len(values)], conts, "character")
        k += len(values)
        fresh += int(values[pred] == latest)
    return fresh / len(blocks)


def invariant_probe(world: World, scorer: Scorer) -> float:
    """Cloze accuracy on the time-invariant facts over all places."""
    conts = [f" {p}." for p in world.places]
    pairs = [("\n" + located(world, e), c) for e in range(len(world.entities)) for c in conts]
    nll = scorer(pairs).reshape(len(world.entities), len(conts))
    preds = [cloze_prediction(row, conts, "character") for row in nll]
    return float(np.mean([p == world.invariant[e] for e, p in enumerate(preds)]))


def generative_probe(world: World, year: int, generate: Generator) -> tuple[float, float]:
    """(exact match, token F1) of greedy answers to year ``year``'s dated prompts."""
    em, f1 = [], []
    for e, r in world.kept:
        text = generate("\n" + dated(world, e, r, year)).split(".")[0].strip()
        gold = [world.value(e, r, year)]
        em.append(exact_match(text, gold))
        f1.append(f1_score(text, gold))
    return float(np.mean(em)), float(np.mean(f1))


# ----------------------------------------------------------------------------- summaries
def recency_slope(acc: dict[int, float]) -> float:
    """OLS slope of accuracy on year (per year)."""
    years = np.array(sorted(acc), dtype=float)
    return float(np.polyfit(years, [acc[int(y)] for y in years], 1)[0])


def forgetting(history: Sequence[dict[int, float]]) -> dict[int, float]:
    """``F[y] = max over evaluations k >= y's of acc_k(y) - acc_final(y)`` (>= 0); the
    history holds one year -> accuracy map per year boundary, in training order."""
    final = history[-1]
    years = sorted(final)
    return {y: max(h[y] for h in history[i:]) - final[y] for i, y in enumerate(years)}


# ----------------------------------------------------------------------------- GPT
def _encode(s: str) -> list[int]:
    return list(s.encode("utf-8"))


def gpt_scorer(model: torch.nn.Module, seq_len: int, batch_size: int = 512) -> Scorer:
    """A Scorer from a byte-level LM (``batch x len`` ids -> ``batch x len x 256`` logits);
    contexts are cut on the left to fit ``seq_len``."""

    @torch.no_grad()
    def score(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        out = np.zeros(len(pairs))
        model.eval()
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start:start + batch_size]
            seqs, n_cont = [], []
            for ctx, cont in chunk:
                c, x = _encode(ctx), _encode(cont)
                seqs.append((c + x)[-(seq_len + 1):])
                n_cont.append(len(x))
            width = max(len(s) for s in seqs)
            ids = torch.zeros(len(seqs), width, dtype=torch.long)
            for j, s in enumerate(seqs):
                ids[j, :len(s)] = torch.tensor(s)
            logp = F.log_softmax(model(ids[:, :-1]).float(), dim=-1)
            tok = logp.gather(2, ids[:, 1:, None])[:, :, 0]
            for j, s in enumerate(seqs):
                out[start + j] = -float(tok[j, len(s) - 1 - n_cont[j]:len(s) - 1].sum())
        model.train()
        return out

    return score


def gpt_generator(model: torch.nn.Module, seq_len: int, max_new: int = 16,
                  stop: str = ".") -> Generator:
    """Greedy byte decoding up to ``stop`` or ``max_new`` bytes."""

    @torch.no_grad()
    def generate(context: str) -> str:
        model.eval()
        ids = _encode(context)[-seq_len:]
        new: list[int] = []
        for _ in range(max_new):
            x = torch.tensor([(ids + new)[-seq_len:]])
            nxt = int(model(x)[0, -1].argmax())
            new.append(nxt)
            if chr(nxt) == stop:
                break
        model.train()
        return bytes(new).decode("utf-8", "replace")

    return generate
