"""Chronological vs shuffled pretraining data and time-sensitive factual knowledge.

Paper: Pilchen, Fabre, Signe Talla, Perez, Grave (Kyutai), "Understanding Data Temporality
Impact on Large Language Models Pre-training" (arXiv 2605.22769, ICML 2026; evaluation
code kyutai-labs/kairos, no training code). Claims tested: pretraining on yearly snapshots
in chronological order gives fresher and more temporally precise factual knowledge than
the same data shuffled, matches it on general text and time-invariant facts, forgets some
older history, and shuffled training peaks on older years, possibly through repetition.

Launch::

    raystudy sweep temporal_pretraining --profile quick           # 2 CPUs, minutes
    raystudy sweep temporal_pretraining --profile quick --space scale   # steps x width
    raystudy run temporal_pretraining --in-process --set train.schedule=reverse
    raystudy data make-temporal-world /tmp/tw   # then --set data.source=tokens
        --set data.path=/tmp/tw --set data.kairosqa=/tmp/tw/kairosqa.jsonl

A trial generates the world and its T yearly snapshots (or reads ``data.path/YEAR/
train.npy``), orders the same rows by ``train.schedule``, trains the byte-level GPT of
``raystudy.algorithms.models`` with AdamW under one warmup-stable-decay LR, and at every
year boundary (the yearly checkpoints) probes the model with the KairosQA rules: per-year
accuracy and year error, beside what a uniform guess and "always the newest value" score on
the same questions (``references.py``, the references T4 is read against).
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from raystudy import (
    DataError,
    Metric,
    MissingDataError,
    Study,
    TrialContext,
)
from raystudy.algorithms.models import GPT
from raystudy.algorithms.temporal import (
    KairosFormatError,
    Mixture,
    World,
    dated_probe,
    filler_rows,
    forgetting,
    freshness_probe,
    generative_probe,
    gpt_generator,
    gpt_scorer,
    invariant_probe,
    make_world,
    order,
    read_kairosqa,
    recency_slope,
    snapshot,
    split_filler,
    world_records,
    wsd_lr,
)
from raystudy.algorithms.temporal.kairos import (
    LETTERS,
    build_choices,
    cloze_prediction,
    kairos_context,
    multi_choice_context,
    multi_choice_prediction,
)
from raystudy.algorithms.text import text_bytes
from raystudy.studies.temporal_pretraining.analysis import analyze
from raystudy.studies.temporal_pretraining.config import DataConfig, TemporalConfig
from raystudy.studies.temporal_pretraining.data import DATA_COMMANDS, WORLD_FILE, world_manifest
from raystudy.studies.temporal_pretraining.references import (
    model_year_errors,
    reference_metrics,
    remembering,
)


# ----------------------------------------------------------------------------- data
def build_world(config: TemporalConfig) -> World:
    w = config.world
    try:
        return make_world(w.entities, w.relations, w.first_year, w.years, w.values,
                          w.p_change, zipf=w.zipf, seed=config.train.seed)
    except ValueError as exc:
        raise DataError(f"world: {exc}") from None


@functools.lru_cache(maxsize=4)
def _filler(n_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    return split_filler(text_bytes("stdlib", n_bytes))


def mixture(d: DataConfig) -> Mixture:
    return Mixture(d.fact_share, d.hist_share, d.dated_share, d.decay, d.invariant_share)


def read_year(path: Path, seq_len: int) -> np.ndarray:
    if not path.is_file():
        raise MissingDataError(f"token file {path} not found: put one year's rows there "
                               "(n x seq_len+1 ids, e.g. `raystudy data make-temporal-world`)")
    rows = np.load(path, mmap_mode="r")
    if rows.ndim != 2 or rows.shape[1] != seq_len + 1:
        raise DataError(f"token file {path}: expected rows of model.seq_len + 1 = "
                        f"{seq_len + 1} ids, got shape {rows.shape}")
    return np.asarray(rows)


def snapshots(config: TemporalConfig, world: World) -> tuple[list[np.ndarray], np.ndarray]:
    """The T yearly snapshots (n_rows x seq_len+1 each) and the validation rows."""
    d, seq = config.data, config.model.seq_len
    n_rows = config.train.steps_per_year * config.train.batch_size
    if d.source == "tokens":
        years = [read_year(Path(d.path) / str(y) / "train.npy", seq) for y in world.years]
        n = min(len(y) for y in years)
        return [y[:n] for y in years], read_year(Path(d.path) / "val.npy", seq)
    train_filler, val_filler = _filler(d.filler_bytes)
    snaps = [snapshot(world, t, n_rows, seq, mixture(d), train_filler, config.train.seed)
             for t in range(len(world.years))]
    return snaps, filler_rows(val_filler, d.val_rows, seq, config.train.seed)


def probe_reads_the_data(config: TemporalConfig) -> float:
    """1.0 when the dated probes ask about the world the model trains on: always for the
    generated world; for token files, only when their ``world.json`` (written by
    make-temporal-world) names this trial's world and seed."""
    if config.data.source != "tokens":
        return 1.0
    try:
        written = json.loads((Path(config.data.path) / WORLD_FILE).read_text())
    except (OSError, ValueError):
        return 0.0
    w = config.world
    return float(written == world_manifest(w.entities, w.relations, w.first_year, w.years,
                                           w.values, w.p_change, w.zipf, config.train.seed))


def check_data(config: TemporalConfig) -> None:
    world = build_world(config)
    if config.data.source == "tokens":
        snapshots(config, world)
    if config.data.kairosqa:
        load_kairosqa(config.data.kairosqa)


def load_kairosqa(path: str) -> list[dict[str, Any]]:
    try:
        return read_kairosqa(path)
    except FileNotFoundError as exc:
        raise MissingDataError(str(exc)) from None
    except KairosFormatError as exc:
        raise DataError(str(exc)) from None


# ----------------------------------------------------------------------------- probes
def kairos_accuracy(records: list[dict[str, Any]], years: list[int], model: torch.nn.Module,
                    seq_len: int, k_shot: int) -> dict[str, dict[int, float]]:
    """KairosQA accuracy per year with the kairos prompts: ``cloze`` (character
    normalisation) and ``multi_choice`` (the letter of the choice)."""
    score = gpt_scorer(model, seq_len)
    out: dict[str, dict[int, float]] = {"cloze": {}, "multi_choice": {}}
    for y in years:
        shots = list(build_choices(records, y, k_shot=k_shot)) if k_shot else []
        items = list(build_choices(records, y, k_shot=-k_shot if k_shot else 0))
        if not items:
            continue
        cloze = mc = 0
        for it in items:
            ctx = kairos_context(it["question"], shots)
            conts = [f" {c}" for c in it["choices"]]
            cloze += int(cloze_prediction(score([(ctx, c) for c in conts]), conts,
                                          "character") == it["gold"])
            prompt = multi_choice_context(it["question"], it["choices"], shots)
            letters = [f" {LETTERS[i]}" for i in range(len(it["choices"]))]
            mc += int(multi_choice_prediction(score([(prompt, c) for c in letters]))
                      == it["gold"])
        out["cloze"][y] = cloze / len(items)
        out["multi_choice"][y] = mc / len(items)
    return out


@torch.no_grad()
def val_loss(model: torch.nn.Module, rows: np.ndarray) -> float:
    """Mean next-byte cross-entropy (nats per byte) on the held-out general text."""
    model.eval()
    ids = torch.from_numpy(rows.astype(np.int64))
    loss = F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
    model.train()
    return float(loss)


def probe(model: torch.nn.Module, world: World, config: TemporalConfig,
          records: list[dict[str, Any]], val: np.ndarray, final: bool,
          questions: list[dict[str, Any]] | None = None) -> dict[str, float]:
    """The year-boundary metrics: the dated probe (per-year accuracy and year error), the
    undated, invariant and general-text probes, and KairosQA when ``records`` are given.
    ``questions``: the world's dated questions (``world_records``), built once per trial."""
    seq = config.model.seq_len
    scorer = gpt_scorer(model, seq)
    if questions is None:
        questions = world_records(world, seed=config.train.seed)
    dated_scorer = remembering(scorer)
    dated = dated_probe(questions, world.years, dated_scorer)
    years = sorted(dated.acc)
    m = {f"eval/acc_{y}": dated.acc[y] for y in years}
    m |= {f"eval/year_error_{y}": e
          for y, e in model_year_errors(questions, world.years, dated_scorer).items()}
    m |= {"eval/acc_last": dated.acc[years[-1]], "eval/acc_first": dated.acc[years[0]],
          "eval/acc_none_last": dated.acc_none[years[-1]],
          "eval/acc_mean": float(np.mean(list(dated.acc.values()))),
          "eval/recency_slope": recency_slope(dated.acc),
          "eval/peak_year": float(max(years, key=lambda y: dated.acc[y])),
          "eval/year_error": dated.year_error, "eval/chance": dated.chance,
          "eval/freshness": freshness_probe(world, scorer),
          "eval/invariant_acc": invariant_probe(world, scorer),
          "eval/val_loss": val_loss(model, val)}
    if final:
        em, f1 = generative_probe(world, world.years[-1], gpt_generator(model, seq))
        m |= {"eval/gen_em_last": em, "eval/gen_f1_last": f1}
    if records:
        kacc = kairos_accuracy(records, world.years, model, seq, config.data.k_shot)
        m |= {f"eval/kairos_acc_{y}": a for y, a in kacc["cloze"].items()}
        m |= {f"eval/kairos_mc_acc_{y}": a for y, a in kacc["multi_choice"].items()}
    return m


# ----------------------------------------------------------------------------- loop
def train_loop(config: TemporalConfig, ctx: TrialContext) -> None:
    torch.set_num_threads(config.train.threads)
    t, seq = config.train, config.model.seq_len
    world = build_world(config)
    snaps, val = snapshots(config, world)
    records = load_kairosqa(config.data.kairosqa) if config.data.kairosqa else []
    questions = world_records(world, seed=t.seed)
    references = reference_metrics(world, questions) | {
        "data/probe_reads_the_data": probe_reads_the_data(config)}
    n_years, n_rows = len(snaps), len(snaps[0])
    steps_per_year = n_rows // t.batch_size
    if steps_per_year == 0:
        raise DataError(f"{n_rows} rows per year, fewer than one batch of {t.batch_size}")
    rows = order(t.schedule, n_years, steps_per_year * t.batch_size, t.seed)
    total = n_years * steps_per_year
    torch.manual_seed(t.seed)
    model = GPT(256, seq, config.model.d_model, config.model.n_layers, config.model.n_heads)
    opt = torch.optim.AdamW(model.parameters(), lr=t.lr, weight_decay=t.weight_decay)
    history: list[dict[int, float]] = []
    state = ctx.load_checkpoint()
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        history = state["history"]
    cadence = ctx.cadence(total, eval_every=steps_per_year, checkpoint_every=1)
    losses: list[float] = []
    for step in cadence:
        batch = rows[(step - 1) * t.batch_size: step * t.batch_size]
        ids = torch.from_numpy(np.stack([snaps[y][i] for y, i in batch]).astype(np.int64))
        for group in opt.param_groups:
            group["lr"] = wsd_lr(step, total, t.lr, t.warmup, t.cooldown)
        loss = F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if not cadence.evaluates(step):
            continue
        metrics = probe(model, world, config, records, val, final=step == total,
                        questions=questions) | references
        history.append({y: metrics[f"eval/acc_{y}"] for y in world.years
                        if f"eval/acc_{y}" in metrics})
        if step == total:
            f = forgetting(history)
            metrics |= {f"eval/forget_{y}": v for y, v in f.items()}
            metrics["eval/forgetting"] = float(np.mean(list(f.values())))
        year_index = math.ceil(step / steps_per_year) - 1
        metrics |= {"train/loss": float(np.mean(losses)), "train/step": float(step),
                    "train/year": float(world.years[min(year_index, n_years - 1)]),
                    "train/lr": wsd_lr(step, total, t.lr, t.warmup, t.cooldown)}
        losses = []
        checkpoint = ({"model": model.state_dict(), "optimizer": opt.state_dict(),
                       "history": history} if cadence.checkpoints(step) else None)
        ctx.report(metrics, checkpoint=checkpoint, step=step)


STUDY = Study(
    name="temporal_pretraining",
    description="chronological vs shuffled yearly snapshots: freshness, temporal precision "
                "and parity of a byte GPT on a generated temporal world (KairosQA rules)",
    config_cls=TemporalConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/acc_last", "max", "dated cloze accuracy on the final year's facts"),
        Metric("eval/recency_slope", "max", "OLS slope of per-year accuracy on year"),
        Metric("eval/freshness", "max", "share of undated probes choosing the latest value"),
        Metric("eval/year_error", "min", "mean |year of the chosen value - asked year|"),
        Metric("eval/acc_first", "max", "dated cloze accuracy on the first year's facts"),
        Metric("eval/val_loss", "min", "general-text validation loss (nats per byte)"),
        Metric("eval/invariant_acc", "max", "cloze accuracy on time-invariant facts"),
    ),
    analyze=analyze,
    check_data=check_data,
    data_commands=DATA_COMMANDS,
)
