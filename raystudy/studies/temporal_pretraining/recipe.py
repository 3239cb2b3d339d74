"""Chronological vs shuffled pretraining data and time-sensitive factual knowledge.

Paper: Pilchen, Fabre, Signe Talla, Perez, Grave (Kyutai), "Understanding Data Temporality
Impact on Large Language Models Pre-training" (arXiv 2605.22769, ICML 2026; evaluation
code kyutai-labs/kairos, no training code). Claims tested: pretraining on yearly snapshots
in chronological order gives fresher and more temporally precise factual knowledge than
the same data shuffled, matches it on general text and time-invariant facts, forgets some
older history, and shuffled training peaks on older years, possibly through repetition.

Launch::

    raystudy sweep temporal_pretraining --profile quick           # 2 CPUs, minutes
    raystudy run temporal_pretraining --in-process --set train.schedule=reverse
    raystudy data make-temporal-world /tmp/tw   # then --set data.source=tokens
        --set data.path=/tmp/tw --set data.kairosqa=/tmp/tw/kairosqa.jsonl

A trial generates the world and its T yearly snapshots (or reads ``data.path/YEAR/
train.npy``), orders the same rows by ``train.schedule``, trains the byte-level GPT of
``raystudy.algorithms.models`` with AdamW under one warmup-stable-decay LR, and at every
year boundary (the yearly checkpoints) probes the model with the KairosQA rules.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import torch
import torch.nn.functional as F

from raystudy import (
    DataError,
    Metric,
    MissingDataError,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Range,
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
    parse,
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
from raystudy.studies.temporal_pretraining.make_data import DATA_COMMANDS

Share = Annotated[float, Range(ge=0, le=1)]
"""A share or probability in [0, 1] (0 and 1 allowed)."""


# ----------------------------------------------------------------------------- config
@dataclass(frozen=True)
class WorldConfig:
    entities: PositiveInt = 16
    """E: entities (pseudo-word names)."""
    relations: PositiveInt = 2
    """R: time-varying relations (at most 8)."""
    first_year: int = 2020
    """The first snapshot's year."""
    years: PositiveInt = 6
    """T: yearly snapshots (>= 3)."""
    values: PositiveInt = 12
    """V: value names per relation."""
    p_change: Share = 0.6
    """Probability that a fact's value changes from one year to the next."""
    zipf: float = 0.0
    """Popularity exponent of entity mentions (0: uniform)."""


@dataclass(frozen=True)
class DataConfig:
    source: Literal["world", "tokens"] = "world"
    """world (generated snapshots) | tokens (data.path/YEAR/train.npy and val.npy)."""
    path: str = ""
    """tokens: folder of per-year token files (rows of seq_len + 1 byte ids)."""
    kairosqa: str = ""
    """A local KairosQA .jsonl, scored with the kairos prompts at every boundary ('' none)."""
    k_shot: NonNegativeInt = 5
    """kairosqa: shots per year (the kairos default 5)."""
    fact_share: Share = 0.6
    """Share of statements about time-varying facts."""
    hist_share: Share = 0.2
    """Share of those that restate an earlier year (the "factual repetition" knob)."""
    dated_share: Share = 0.7
    """Share of current statements that carry the year."""
    decay: Share = 0.7
    """Weight decay^(t - s) of a historical statement about year s in snapshot t."""
    invariant_share: Share = 0.15
    """Share of time-invariant statements ("Kelvor is in Ostra.")."""
    filler_bytes: PositiveInt = 400_000
    """Bytes of general text (Python's stdlib sources) behind the filler."""
    val_rows: PositiveInt = 128
    """Held-out filler rows for the general-text validation loss."""


@dataclass(frozen=True)
class ModelConfig:
    d_model: PositiveInt = 64
    """Residual width."""
    n_layers: PositiveInt = 2
    """Transformer blocks."""
    n_heads: PositiveInt = 4
    """Attention heads."""
    seq_len: PositiveInt = 64
    """Context length in bytes."""


@dataclass(frozen=True)
class TrainConfig:
    schedule: str = "sequential"
    """sequential | shuffled | reverse | shuffled_upto/T (year index) | replay/RHO."""
    steps_per_year: PositiveInt = 200
    """Optimizer steps per snapshot (one pass over its rows)."""
    batch_size: PositiveInt = 16
    """Rows per step."""
    lr: PositiveFloat = 3e-3
    """AdamW peak learning rate."""
    weight_decay: float = 0.1
    """AdamW decoupled weight decay."""
    warmup: NonNegativeInt = 50
    """Linear warmup steps."""
    cooldown: Share = 0.1
    """Final share of steps with a linear cooldown to 0 (WSD, the same for all schedules)."""
    seed: int = 0
    """Seed of the world, the snapshots, the row order and the init (paired over)."""
    threads: PositiveInt = 1
    """torch CPU threads per trial."""


@dataclass(frozen=True)
class TemporalConfig:
    world: WorldConfig = field(default_factory=WorldConfig)
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def validate(self) -> None:
        parse(self.train.schedule)
        if self.model.d_model % self.model.n_heads:
            raise ValueError("model.d_model must be divisible by model.n_heads")
        if self.world.years < 3:
            raise ValueError("world.years must be >= 3 (KairosQA keeps facts with >= 3 values)")
        if self.data.fact_share + self.data.invariant_share > 1:
            raise ValueError("data.fact_share + data.invariant_share must be <= 1")
        if self.data.source == "tokens" and not self.data.path:
            raise ValueError("data.source=tokens needs data.path (folder of YEAR/train.npy)")


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
          records: list[dict[str, Any]], val: np.ndarray, final: bool) -> dict[str, float]:
    seq = config.model.seq_len
    scorer = gpt_scorer(model, seq)
    dated = dated_probe(world_records(world, seed=config.train.seed), world.years, scorer)
    years = sorted(dated.acc)
    m = {f"eval/acc_{y}": dated.acc[y] for y in years}
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
        metrics = probe(model, world, config, records, val, final=step == total)
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
