"""The dated probe's year error per question year, and what two guesses score on the same
questions: the chance references T4 is read against.

A question about year y offers four choices (``kairos.build_choices``), each tagged with
the last year its value held (a year -1 distractor, never held, counts the window's span,
as ``dated_probe`` does). On those choices:

* the **uniform guess** scores the mean error over a question's choices;
* **always newest** picks the choice whose value held most recently (the largest choice
  year; a year -1 distractor is never newest), what a model that answers every question
  with the latest value it saw would score.

Both depend only on the world (its records and years), so the loop reports them beside
the model's error and ``analysis`` rebuilds them from a trial's config when a run predates
them. Pure NumPy over the algorithms layer: no recipe, no torch model.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from raystudy.algorithms.temporal import (
    World,
    build_choices,
    cloze_prediction,
    make_world,
    world_records,
)
from raystudy.studies.temporal_pretraining.config import WorldConfig

N_CHOICES = 4
"""Choices per dated question (``dated_probe``'s default, KairosQA's ``n_choices``)."""

Scorer = Callable[[Sequence[tuple[str, str]]], np.ndarray]


@dataclass(frozen=True)
class YearErrorReference:
    """One question year's chance references and its number of questions."""

    uniform: float
    newest: float
    questions: int


def _errors(item: Mapping[str, Any], year: int, span: int) -> list[int]:
    """The year error of each of ``item``'s choices for a question about ``year``."""
    return [span if c == -1 else abs(int(c) - year) for c in item["choice_years"]]


def chance_references(records: Sequence[dict[str, Any]], years: Sequence[int]
                      ) -> dict[int, YearErrorReference]:
    """year -> the uniform guess's and always-newest's mean year error on that year's
    questions (years without a question are left out)."""
    span = max(years) - min(years)
    out = {}
    for y in years:
        items = list(build_choices(list(records), y, N_CHOICES))
        if not items:
            continue
        uniform = [float(np.mean(_errors(it, y, span))) for it in items]
        newest = [_errors(it, y, span)[int(np.argmax(it["choice_years"]))] for it in items]
        out[y] = YearErrorReference(float(np.mean(uniform)), float(np.mean(newest)),
                                    len(items))
    return out


def pooled(by_year: Mapping[int, float], references: Mapping[int, YearErrorReference]
           ) -> float:
    """The question-weighted mean over years, as ``dated_probe`` pools its year error."""
    years = [y for y in by_year if y in references]
    weights = [references[y].questions for y in years]
    return float(np.average([by_year[y] for y in years], weights=weights)) if years \
        else float("nan")


def model_year_errors(records: Sequence[dict[str, Any]], years: Sequence[int],
                      scorer: Scorer, prefix: str = "\n", suffix: str = "."
                      ) -> dict[int, float]:
    """year -> the model's mean year error on that year's questions, the choice made as
    ``dated_probe`` makes it (character normalisation, the same context and continuation),
    so pooling these with :func:`pooled` gives its ``year_error``."""
    span = max(years) - min(years)
    out = {}
    for y in years:
        items = list(build_choices(list(records), y, N_CHOICES))
        if not items:
            continue
        pairs = [(prefix + it["question"], f" {c}{suffix}") for it in items
                 for c in it["choices"]]
        nll = scorer(pairs)
        errors, k = [], 0
        for it in items:
            conts = [f" {c}{suffix}" for c in it["choices"]]
            pred = cloze_prediction(nll[k:k + len(conts)], conts, "character")
            k += len(conts)
            errors.append(_errors(it, y, span)[pred])
        out[y] = float(np.mean(errors))
    return out


def remembering(scorer: Scorer) -> Scorer:
    """``scorer`` with a memory: a pair already scored is not scored again (the dated
    probe's pairs, read again for the per-year year error). The first call's pairs go to
    ``scorer`` as they come, so its batches, and its numbers, are unchanged."""
    memory: dict[tuple[str, str], float] = {}

    def score(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """The remembered NLL of each pair, scoring only the new ones."""
        todo = [p for p in pairs if p not in memory]
        if todo:
            memory.update(zip(todo, map(float, scorer(todo)), strict=True))
        return np.array([memory[p] for p in pairs])

    return score


def _world_key(config: Mapping[str, Any]) -> tuple[Any, ...]:
    """The dotted config keys that decide a trial's world, defaults filled in."""
    w = WorldConfig()
    return (int(config.get("world.entities", w.entities)),
            int(config.get("world.relations", w.relations)),
            int(config.get("world.first_year", w.first_year)),
            int(config.get("world.years", w.years)), int(config.get("world.values", w.values)),
            float(config.get("world.p_change", w.p_change)),
            float(config.get("world.zipf", w.zipf)), int(config.get("train.seed", 0)))


@functools.lru_cache(maxsize=64)
def _world(key: tuple[Any, ...]) -> World:
    """The world of a :func:`_world_key` (cached: a report rebuilds it several times)."""
    entities, relations, first_year, years, values, p_change, zipf, seed = key
    return make_world(entities, relations, first_year, years, values, p_change, zipf=zipf,
                      seed=seed)


@functools.lru_cache(maxsize=64)
def _references(key: tuple[Any, ...]) -> dict[int, YearErrorReference]:
    """The chance references of a :func:`_world_key`'s world (cached)."""
    world = _world(key)
    return chance_references(world_records(world, seed=key[-1]), world.years)


def world_from_config(config: Mapping[str, Any]) -> World:
    """The generated world a trial probed, rebuilt from its dotted config (the world keys
    and ``train.seed``), for a run that predates the reported references."""
    return _world(_world_key(config))


def references_from_config(config: Mapping[str, Any]) -> dict[int, YearErrorReference]:
    """:func:`chance_references` of the world a trial's config names (cached per world)."""
    return _references(_world_key(config))


def reference_metrics(world: World, records: Sequence[dict[str, Any]]
                      ) -> dict[str, float]:
    """The references as report metrics: per year and pooled, and the invariant probe's
    chance (one over the world's places)."""
    refs = chance_references(records, world.years)
    out = {f"eval/year_error_uniform_{y}": r.uniform for y, r in refs.items()}
    out |= {f"eval/year_error_newest_{y}": r.newest for y, r in refs.items()}
    out["eval/year_error_uniform"] = pooled({y: r.uniform for y, r in refs.items()}, refs)
    out["eval/year_error_newest"] = pooled({y: r.newest for y, r in refs.items()}, refs)
    out["eval/invariant_chance"] = 1.0 / len(world.places)
    return out
