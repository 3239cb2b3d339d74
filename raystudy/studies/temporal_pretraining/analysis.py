"""The temporal study's report: final-checkpoint metrics per schedule and size, each arm
against chance, per-year accuracy and year error with its chance references, the
forgetting matrices, where the learning-rate cool-down falls, and the claims, paired over
seeds (a seed fixes the world, the rows, their within-snapshot order and the init;
schedules share them). Effect = sequential - shuffled at the final checkpoint, at the
profile's ``data.hist_share``:

* T1 fresher (``acc_last``, ``freshness``, and the secondary summary's reading, greedy
  generative F1 on the final year: greater), T2 a recency slope above shuffled's, T4 a
  smaller year error, T5 lower first-year accuracy (forgetting): Holm over the six;
* T3 parity: ``val_loss`` within +-0.02 nats/byte and ``invariant_acc`` within +-0.03,
  ``stats.equivalence`` (TOST, 90 % interval);
* T6 the mechanism: shuffled's recency slope at the largest ``hist_share`` minus at 0,
  ``less`` (read when the run has the ``mechanism`` space).

Preconditions, each computed from the run: every arm a claim compares learned what it is
compared on, above chance by ``ABOVE_CHANCE`` (final-year accuracy for T1, T2, T4, T5; mean
dated accuracy over the years for T6; invariant accuracy and general-text loss for T3),
and for T4 each arm's year error measurably below the better of two chance references
(the uniform guess, always the newest value; ``references.py``). A run over several model
sizes (``spaces/scale.yaml``) is read at its largest size (most steps x width^2 x depth);
every size's arms against chance are tabulated. The paper's regimes the run did not cover
are ``not run`` rows.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from matplotlib.figure import Figure

from raystudy import Analysis, Claim, RunResults, Table, claims
from raystudy.algorithms import stats
from raystudy.algorithms.stats import Direction
from raystudy.algorithms.temporal import order, wsd_lr
from raystudy.studies.temporal_pretraining.config import ModelConfig, TrainConfig
from raystudy.studies.temporal_pretraining.references import (
    references_from_config,
    world_from_config,
)

ABOVE_CHANCE = 0.10
"""An arm learned what a claim compares when its mean over seeds clears the probe's chance
level by this much (final-year accuracy for T1, T2, T4, T5): about 3.5 standard errors of an
8-seed mean of final-year accuracy on the quick world's ~30 questions per year at chance
0.25, so an arm at chance (the reviewer's shuffled 0.235) cannot pass by noise."""
LOSS_MARGIN = 0.02
"""T3: general-text loss equivalence margin (nats per byte), raystudy's choice."""
INVARIANT_MARGIN = 0.03
"""T3: invariant-fact accuracy equivalence margin (3 points), raystudy's choice."""
UNIFORM_BYTE_LOSS = math.log(256)
"""The general-text loss of a model that learned nothing: a uniform guess over 256 bytes."""
TEXT_LEARNED = 1.0
"""T3: an arm learned general text when its validation loss is this many nats per byte
below the uniform byte guess (the quick runs sit about 3.3 below it)."""
DIRECTIONAL: tuple[tuple[str, str, Direction], ...] = (
    ("T1: sequential is more up-to-date (final-year accuracy)", "eval/acc_last", "greater"),
    ("T1: sequential is fresher (undated probes choose the latest value)", "eval/freshness",
     "greater"),
    ("T1: sequential answers the final year better in free generation (greedy F1, the "
     "secondary summary's reading)", "eval/gen_f1_last", "greater"),
    ("T2: sequential's recency slope is above shuffled's (shuffled peaks on older data)",
     "eval/recency_slope", "greater"),
    ("T4: sequential is more temporally precise (smaller year error)", "eval/year_error",
     "less"),
    ("T5: sequential forgets older history (lower first-year accuracy)", "eval/acc_first",
     "less"),
)
PAPER_SCALE = ("6B-parameter Helium models on Common Crawl snapshots 2018-2025, 2.5T tokens "
               "(about 315B a year), a GPU cluster")
PAPER_DATA = ("Common Crawl yearly snapshots and KairosQA (7,167 questions, kairos prompts, "
              "5 shots)")


class Cell(NamedTuple):
    """One arm of the run: a schedule at a repetition share and a model size."""

    schedule: str
    hist_share: float
    steps_per_year: int
    d_model: int
    n_layers: int

    @property
    def size(self) -> Size:
        """(steps per year, d_model, n_layers)."""
        return self.steps_per_year, self.d_model, self.n_layers


Size = tuple[int, int, int]
"""(steps per year, d_model, n_layers)."""
Runs = dict[Cell, dict[int, dict[str, Any]]]


def collect(results: RunResults) -> Runs:
    """Cell -> seed -> last report (with ``_history`` and the trial's ``_config``)."""
    train, model = TrainConfig(), ModelConfig()
    out: Runs = defaultdict(dict)
    for t in results.trials:
        if not t.history or not t.config or "eval/acc_last" not in t.history[-1]:
            continue
        c = t.config
        cell = Cell(str(c["train.schedule"]), float(c.get("data.hist_share", 0.2)),
                    int(c.get("train.steps_per_year", train.steps_per_year)),
                    int(c.get("model.d_model", model.d_model)),
                    int(c.get("model.n_layers", model.n_layers)))
        out[cell][int(c["train.seed"])] = {**t.history[-1], "_history": t.history,
                                           "_config": c}
    return out


def compute(size: Size) -> int:
    """A size's training compute, up to a constant: steps x width^2 x depth."""
    steps, width, depth = size
    return steps * width**2 * depth


def claim_size(runs: Runs) -> Size | None:
    """The largest size (by :func:`compute`) that has both sequential and shuffled at one
    ``hist_share``: the claims are read there."""
    pairs = {k.size for k in runs if k.schedule == "sequential"
             and any(o.schedule == "shuffled" and o.size == k.size
                     and o.hist_share == k.hist_share for o in runs)}
    return max(pairs, key=lambda s: (compute(s), s)) if pairs else None


def claim_share(runs: Runs, size: Size | None) -> float:
    """The ``hist_share`` the claims read: 0.2 (the profiles') when paired there."""
    shares = sorted(k.hist_share for k in runs if k.schedule == "sequential"
                    and k.size == size and Cell("shuffled", k.hist_share, *k.size) in runs)
    return 0.2 if 0.2 in shares or not shares else shares[0]


def _values(runs: Runs, cell: Cell, metric: str) -> list[float]:
    """``metric`` of each of ``cell``'s seeds that reported it, in seed order."""
    return [float(r[metric]) for _, r in sorted(runs.get(cell, {}).items()) if metric in r]


def _pair(runs: Runs, a: Cell, b: Cell, m: str) -> tuple[list[float], list[float]]:
    seeds = sorted(s for s in set(runs.get(a, {})) & set(runs.get(b, {}))
                   if m in runs[a][s] and m in runs[b][s])
    return [runs[a][s][m] for s in seeds], [runs[b][s][m] for s in seeds]


def year_references(report: dict[str, Any]) -> dict[int, tuple[float, float]]:
    """A trial's chance references per question year, (uniform guess, always newest): as
    reported, or rebuilt from its config for a run that predates them."""
    years = years_of(report)
    if years and f"eval/year_error_uniform_{years[0]}" in report:
        return {y: (float(report[f"eval/year_error_uniform_{y}"]),
                    float(report[f"eval/year_error_newest_{y}"])) for y in years
                if f"eval/year_error_uniform_{y}" in report}
    refs = references_from_config(report.get("_config", {}))
    return {y: (r.uniform, r.newest) for y, r in refs.items()}


def pooled_reference(report: dict[str, Any], kind: str) -> float:
    """A trial's pooled chance reference (``uniform`` or ``newest``), as reported or
    rebuilt from its config."""
    key = f"eval/year_error_{kind}"
    if key in report:
        return float(report[key])
    refs = references_from_config(report.get("_config", {}))
    return float(np.average([getattr(r, kind) for r in refs.values()],
                            weights=[r.questions for r in refs.values()]))


def invariant_chance(report: dict[str, Any]) -> float:
    """One over the world's places: as reported, or rebuilt from the trial's config."""
    if "eval/invariant_chance" in report:
        return float(report["eval/invariant_chance"])
    return 1.0 / len(world_from_config(report.get("_config", {})).places)


# ----------------------------------------------------------------------------- preconditions
def reads_tokens(runs: Runs) -> bool:
    return any(str(r["_config"].get("data.source", "world")) == "tokens"
               for v in runs.values() for r in v.values())


def probes_read_the_data(runs: Runs, cells: list[Cell]) -> claims.Precondition:
    """On token files, the generated world's probes count only where the files hold that
    world: their ``world.json`` (make-temporal-world) names each trial's world and seed."""
    values = [r.get("data/probe_reads_the_data", math.nan)
              for c in cells for r in runs.get(c, {}).values()]
    matching = sum(v == 1.0 for v in values)
    return claims.Precondition(
        "the dated probes ask about the world the arms trained on (the token folder's "
        "world.json, written by make-temporal-world, names each trial's world and seed)",
        bool(values) and matching == len(values),
        f"{matching} of {len(values)} trials read token files written for their world"
        + ("" if matching == len(values) else "; on real snapshots score KairosQA "
           "(data.kairosqa): the generated world's questions ask about facts the model "
           "never read"))


def above_chance(runs: Runs, cell: Cell, metric: str = "eval/acc_last",
                 what: str = "final-year accuracy") -> claims.Precondition:
    """``cell`` learned year binding: its mean ``metric`` clears the dated probe's chance
    by ``ABOVE_CHANCE``."""
    statement = f"{cell.schedule} learned year binding: its {what} clears chance by " \
                f"{ABOVE_CHANCE:g}"
    values, chance = _values(runs, cell, metric), _values(runs, cell, "eval/chance")
    if not values or not chance:
        return claims.Precondition(statement, False, f"{cell.schedule}: no trial reported it")
    mean, level = float(np.mean(values)), float(np.mean(chance))
    return claims.Precondition(statement, mean >= level + ABOVE_CHANCE,
                               f"{cell.schedule} {mean:.3f} over {len(values)} seeds vs "
                               f"chance {level:.3f} + {ABOVE_CHANCE:g}")


def beats_year_error_references(runs: Runs, cell: Cell) -> claims.Precondition:
    """``cell``'s year error lies measurably below the better chance reference (the
    uniform guess or always newest, whichever errs less on each seed's world): the 95 %
    interval of the paired difference below 0."""
    statement = (f"{cell.schedule}'s year error is below the better chance reference "
                 "(uniform guess, always newest)")
    reports = [r for _, r in sorted(runs.get(cell, {}).items()) if "eval/year_error" in r]
    if not reports:
        return claims.Precondition(statement, False, f"{cell.schedule}: no year error")
    errors = [float(r["eval/year_error"]) for r in reports]
    uniform = [pooled_reference(r, "uniform") for r in reports]
    newest = [pooled_reference(r, "newest") for r in reports]
    better = [min(u, n) for u, n in zip(uniform, newest, strict=True)]
    d = stats.paired_comparison(errors, better)
    return claims.Precondition(
        statement, bool(d.ci_high < 0),
        f"{cell.schedule} {np.mean(errors):.2f} vs uniform guess {np.mean(uniform):.2f}, "
        f"always newest {np.mean(newest):.2f}; {cell.schedule} - better "
        f"{d.mean_difference:+.2f} [{d.ci_low:+.2f}, {d.ci_high:+.2f}] over {d.n} seeds")


def learned_invariants(runs: Runs, cell: Cell) -> claims.Precondition:
    """``cell`` learned the time-invariant facts: accuracy above one over the places by
    ``ABOVE_CHANCE``."""
    statement = (f"{cell.schedule} learned the invariant facts: accuracy clears chance by "
                 f"{ABOVE_CHANCE:g}")
    reports = [r for _, r in sorted(runs.get(cell, {}).items()) if "eval/invariant_acc" in r]
    if not reports:
        return claims.Precondition(statement, False, f"{cell.schedule}: no trial reported it")
    mean = float(np.mean([r["eval/invariant_acc"] for r in reports]))
    chance = float(np.mean([invariant_chance(r) for r in reports]))
    return claims.Precondition(statement, mean >= chance + ABOVE_CHANCE,
                               f"{cell.schedule} {mean:.3f} vs chance {chance:.3f} + "
                               f"{ABOVE_CHANCE:g}")


def learned_text(runs: Runs, cell: Cell) -> claims.Precondition:
    """``cell`` learned general text: validation loss ``TEXT_LEARNED`` below the uniform
    byte guess."""
    statement = (f"{cell.schedule} learned general text: validation loss {TEXT_LEARNED:g} "
                 "nat/byte below the uniform byte guess")
    values = _values(runs, cell, "eval/val_loss")
    if not values:
        return claims.Precondition(statement, False, f"{cell.schedule}: no validation loss")
    mean = float(np.mean(values))
    return claims.Precondition(statement, mean <= UNIFORM_BYTE_LOSS - TEXT_LEARNED,
                               f"{cell.schedule} {mean:.3f} vs ln 256 = "
                               f"{UNIFORM_BYTE_LOSS:.3f} nats/byte")


# ----------------------------------------------------------------------------- scope
def scope(runs: Runs, cells: list[Cell]) -> str:
    """What the claims read at ``cells`` hold for: the data (the generated world, named a
    stand-in), the model and training, and the hardware."""
    reports = [r for c in cells for r in runs.get(c, {}).values()]
    c = reports[0]["_config"] if reports else {}
    if str(c.get("data.source", "world")) == "tokens":
        data = (f"per-year token files from {c.get('data.path', '?')}, probed with the "
                "generated world's dated questions (valid where make-temporal-world wrote "
                "the files for that world: a precondition)")
    else:
        first = int(c.get("world.first_year", 2020))
        data = (f"a generated temporal world ({c.get('world.entities', 16)} entities x "
                f"{c.get('world.relations', 2)} relations, {first}-"
                f"{first + int(c.get('world.years', 6)) - 1}, p_change "
                f"{c.get('world.p_change', 0.6)}): a stand-in for Common Crawl snapshots, "
                "probed with KairosQA's rules on its own questions")
    cell = cells[0] if cells else None
    shares = ", ".join(f"{h:g}" for h in sorted({k.hist_share for k in cells}))
    model = (f"byte GPT d {cell.d_model} x {cell.n_layers} layers, {cell.steps_per_year} "
             f"steps/year x batch {c.get('train.batch_size', 16)}, hist_share "
             f"{shares}" if cell else "")
    return f"{data}; {model}; CPU, {c.get('train.threads', 1)} thread(s) per trial"


# ----------------------------------------------------------------------------- claims
def claim_rows(runs: Runs, size: Size, h: float, where: str) -> list[Claim]:
    """T1-T6 at ``size`` and ``hist_share`` ``h``, each with its preconditions."""
    seq, shu = Cell("sequential", h, *size), Cell("shuffled", h, *size)
    statements = [d[0] for d in DIRECTIONAL] + [
        f"T3: sequential matches shuffled on general text (val loss within +-{LOSS_MARGIN})",
        f"T3: sequential matches shuffled on invariant facts (within +-{INVARIANT_MARGIN})",
        "T6: shuffled's recency slope falls as factual repetition (hist_share) rises"]
    x, _ = _pair(runs, seq, shu, "eval/acc_last")
    if not x:
        return [claims.missing_claim(s, "paired over seeds", "sequential - shuffled",
                                     f"sequential or shuffled not run at hist_share={h:g}",
                                     scope=where) for s in statements]
    data = (probes_read_the_data(runs, [seq, shu]),) if reads_tokens(runs) else ()
    learned = (*data, above_chance(runs, seq), above_chance(runs, shu))
    tests = []
    for statement, m, direction in DIRECTIONAL:
        a, b = _pair(runs, seq, shu, m)
        gates = learned + ((beats_year_error_references(runs, seq),
                            beats_year_error_references(runs, shu))
                           if m == "eval/year_error" else ())
        tests.append(claims.Test(statement, f"{m}: sequential - shuffled",
                                 stats.paired_comparison(a, b), direction,
                                 preconditions=gates))
    rows = claims.holm_family(tests, f"{len(tests)} directional claims", scope=where)
    for statement, m, margin, gates in (
            (statements[6], "eval/val_loss", LOSS_MARGIN,
             (learned_text(runs, seq), learned_text(runs, shu))),
            (statements[7], "eval/invariant_acc", INVARIANT_MARGIN,
             (*data, learned_invariants(runs, seq), learned_invariants(runs, shu)))):
        a, b = _pair(runs, seq, shu, m)
        rows.append(claims.equivalence_claim(statement, f"{m}: sequential - shuffled",
                                             stats.equivalence(a, b, margin), margin,
                                             scope=where, preconditions=gates))
    shares = sorted(k.hist_share for k in runs if k.schedule == "shuffled" and k.size == size)
    if len(shares) >= 2 and shares[0] == 0.0:
        top, zero = Cell("shuffled", shares[-1], *size), Cell("shuffled", 0.0, *size)
        a, b = _pair(runs, top, zero, "eval/recency_slope")
        gates = (*data, *(above_chance(runs, c, "eval/acc_mean", "mean dated accuracy over "
                                       f"the years (hist_share {c.hist_share:g})")
                          for c in (top, zero)))
        rows.append(claims.paired_claim(
            statements[8], f"shuffled recency slope: hist_share={shares[-1]:g} - 0",
            stats.paired_comparison(a, b), "less", note="the repetition is built into the "
            "generator: this tests its effect, not that real crawls repeat old facts",
            scope=scope(runs, [top, zero]),
            preconditions=gates))
    else:
        rows.append(claims.missing_claim(statements[8], "paired over seeds", "slope(h) - "
                                         "slope(0)", "shuffled not run at hist_share 0 and "
                                         "above (space mechanism)", scope=where))
    return rows


def not_run_rows(runs: Runs, size: Size | None) -> list[Claim]:
    """The paper's regimes this run did not cover: its scale always, its data when the run
    read the generated world or no KairosQA file."""
    configs = [r["_config"] for v in runs.values() for r in v.values()]
    generated = any(str(c.get("data.source", "world")) == "world" for c in configs)
    kairos = all(c.get("data.kairosqa") for c in configs)
    rows = []
    if generated or not kairos:
        rows.append(claims.not_run(
            "T1-T5 on the paper's data: chronological Common Crawl snapshots against the same "
            "shuffled, scored on KairosQA", PAPER_DATA,
            ("this run trained on the generated world" if generated else
             "this run scored no KairosQA file") + "; the paper profile reads per-year token "
            "files and a KairosQA .jsonl the user places (data.path, data.kairosqa)"))
    steps, width, depth = size or (0, 0, 0)
    params = 12 * depth * width**2
    rows.append(claims.not_run(
        "T1-T6 at the paper's scale", PAPER_SCALE,
        f"this run's claims read a byte GPT of d {width} x {depth} layers (about "
        f"{params / 1e6:.2g}M parameters in its blocks) trained {steps} steps a year on a CPU"))
    return rows


# ----------------------------------------------------------------------------- tables
COLUMNS = ["eval/acc_last", "eval/acc_first", "eval/acc_mean", "eval/recency_slope",
           "eval/peak_year", "eval/year_error", "eval/freshness", "eval/forgetting",
           "eval/val_loss", "eval/invariant_acc", "eval/gen_f1_last"]


def final_table(runs: Runs) -> Table:
    rows = []
    for k in sorted(runs):
        r = list(runs[k].values())
        ci = stats.bootstrap_mean_ci([x["eval/acc_last"] for x in r]) if len(r) > 1 \
            else (np.nan, np.nan)
        rows.append([k.schedule, k.hist_share, k.steps_per_year, k.d_model, k.n_layers,
                     len(r), f"[{ci[0]:.3f}, {ci[1]:.3f}]",
                     *[float(np.mean([x.get(c, np.nan) for x in r])) for c in COLUMNS]])
    return Table("Final checkpoint per schedule (means over seeds; generated world)",
                 ["schedule", "hist_share", "steps/year", "d_model", "layers", "seeds",
                  "acc_last 95 % CI", *[c.removeprefix("eval/") for c in COLUMNS]], rows,
                 note="accuracy: dated cloze, character normalisation, 4 choices (chance "
                      "~0.25); controls (reverse, replay, shuffled_upto) carry no claim")


def arms_table(runs: Runs, read_at: Size | None) -> Table:
    """Every arm against its chance levels: final-year accuracy against chance +
    ``ABOVE_CHANCE``, year error against the two references."""
    rows = []
    for k in sorted(runs):
        reports = list(runs[k].values())
        acc = float(np.mean([r["eval/acc_last"] for r in reports]))
        chance = float(np.mean([r.get("eval/chance", np.nan) for r in reports]))
        rows.append([k.schedule, k.hist_share, k.steps_per_year, k.d_model, k.n_layers,
                     len(reports), acc, chance + ABOVE_CHANCE,
                     "yes" if acc >= chance + ABOVE_CHANCE else "no",
                     float(np.mean([r.get("eval/year_error", np.nan) for r in reports])),
                     float(np.mean([pooled_reference(r, "uniform") for r in reports])),
                     float(np.mean([pooled_reference(r, "newest") for r in reports])),
                     "yes" if k.size == read_at else ""])
    return Table("Each arm against chance (means over seeds; generated world)",
                 ["schedule", "hist_share", "steps/year", "d_model", "layers", "seeds",
                  "acc_last", "chance + margin", "learned", "year error",
                  "uniform guess", "always newest", "claims read here"], rows,
                 note=f"learned: final-year accuracy at least chance + {ABOVE_CHANCE:g}, the "
                      "precondition of T1, T2, T4, T5; the year-error references are computed "
                      "from each seed's world (references.py); the claims read the largest "
                      "size")


def years_of(report: dict[str, Any]) -> list[int]:
    return sorted(int(k.rsplit("_", 1)[1]) for k in report
                  if k.startswith("eval/acc_") and k.rsplit("_", 1)[1].isdigit())


def per_year_table(runs: Runs) -> Table:
    years = years_of(next(iter(next(iter(runs.values())).values())))
    rows = [[k.schedule, k.hist_share, k.steps_per_year, k.d_model,
             *[float(np.mean([x.get(f"eval/acc_{y}", np.nan) for x in runs[k].values()]))
               for y in years]] for k in sorted(runs)]
    return Table("Final per-year accuracy (the question's year; generated world)",
                 ["schedule", "hist_share", "steps/year", "d_model", *map(str, years)], rows)


def year_error_table(runs: Runs, cells: list[Cell]) -> Table:
    """T4 per question year, not pooled: each arm's year error beside what the uniform guess
    and always-newest score on the same questions (means over seeds)."""
    reports = [r for c in cells for r in runs.get(c, {}).values()]
    years = years_of(reports[0]) if reports else []
    references = [year_references(r) for r in reports]
    rows: list[list[Any]] = [
        [c.schedule, *[float(np.mean([r.get(f"eval/year_error_{y}", np.nan)
                                      for r in runs[c].values()])) for y in years],
         float(np.mean([r.get("eval/year_error", np.nan) for r in runs[c].values()]))]
        for c in cells if c in runs]
    for index, (kind, label) in enumerate((("uniform", "uniform guess"),
                                           ("newest", "always newest"))):
        rows.append([label, *[float(np.mean([ref[y][index] for ref in references
                                             if y in ref])) for y in years],
                     float(np.mean([pooled_reference(r, kind) for r in reports]))])
    return Table("Year error per question year, with its chance references (generated world)",
                 ["arm", *map(str, years), "pooled"], rows,
                 note="|year of the chosen value - asked year|, a never-held distractor counts "
                      "the window's span; uniform guess: the mean over a question's choices; "
                      "always newest: the choice held most recently. A year an arm has "
                      "forgotten sits near the references: the pooled error re-measures "
                      "forgetting, so T4 is read only when each arm's pooled error is "
                      "measurably below the better reference (a precondition)")


def accuracy_matrix(runs: Runs, k: Cell) -> tuple[list[int], list[int], np.ndarray, float]:
    """A schedule's accuracy per question year (columns) at each yearly checkpoint (rows,
    the years trained through), means over seeds; and chance."""
    hist = [[r for r in v["_history"] if "eval/acc_last" in r] for v in runs[k].values()]
    n = min(len(hh) for hh in hist)
    years = years_of(hist[0][n - 1])
    matrix = np.array([[np.mean([hh[i][f"eval/acc_{y}"] for hh in hist]) for y in years]
                       for i in range(n)])
    return ([int(hist[0][i]["train/year"]) for i in range(n)], years, matrix,
            float(hist[0][n - 1]["eval/chance"]))


def forgetting_tables(runs: Runs, cells: list[Cell]) -> list[Table]:
    """The accuracy matrix of each schedule of the pair; a column falling down the rows is
    forgetting."""
    tables = []
    for k in cells:
        if k not in runs:
            continue
        trained, years, matrix, _ = accuracy_matrix(runs, k)
        rows = [[t, *map(float, row)] for t, row in zip(trained, matrix, strict=True)]
        tables.append(Table(f"Forgetting matrix: {k.schedule} (hist_share {k.hist_share:g}), "
                            "accuracy per question year after each year of training", [
                                "trained through", *map(str, years)], rows,
                            note=f"means over {len(runs[k])} seeds; eval/forgetting = the "
                                 "mean over years of (best accuracy from the year's own "
                                 "checkpoint on) - (final accuracy)"))
    return tables


def cooldown_table(runs: Runs, cells: list[Cell]) -> Table | None:
    """Where the learning-rate cool-down falls: its steps (the same for every schedule, the
    LR a function of the step alone) and the share of the rows it trains on from each year
    (which the schedule's order decides), from the first seed's config."""
    train = TrainConfig()
    rows, years = [], []
    for k in cells:
        if k not in runs:
            continue
        seed = min(runs[k])
        c = runs[k][seed]["_config"]
        n_years, first = int(c.get("world.years", 6)), int(c.get("world.first_year", 2020))
        batch = int(c.get("train.batch_size", train.batch_size))
        share = float(c.get("train.cooldown", train.cooldown))
        lr, warmup = float(c.get("train.lr", train.lr)), int(c.get("train.warmup", train.warmup))
        total = n_years * k.steps_per_year
        start = total - int(round(share * total)) + 1  # wsd_lr's first step below the peak
        if start > total:
            continue
        rows_in_order = order(k.schedule, n_years, k.steps_per_year * batch, seed)
        cooled = rows_in_order[(start - 1) * batch:total * batch, 0]
        years = list(range(first, first + n_years))
        rows.append([k.schedule, f"{start}-{total} of {total}",
                     f"{wsd_lr(start, total, lr, warmup, share):.3g} -> "
                     f"{wsd_lr(total, total, lr, warmup, share):.3g}",
                     *[float(np.mean(cooled == t)) for t in range(n_years)]])
    if not rows:
        return None
    return Table("Learning-rate cool-down: its steps, and the share of its rows from each year",
                 ["schedule", "cool-down steps", "lr", *map(str, years)], rows,
                 note="the LR is wsd_lr(step, total), one function of the step for every "
                      "schedule, so both arms cool down over the same final steps; what "
                      "differs is the rows the order puts there (sequential: the final "
                      "year's), which is the treatment itself. shuffled_upto/T (space "
                      "shuffle_eq) keeps the final years in order under the same cool-down")


def figure(runs: Runs, cells: list[Cell], figures_dir: Path) -> list[tuple[str, Path]]:
    schedules = [k for k in cells if k in runs]
    if not schedules:
        return []
    fig = Figure(figsize=(4.6 * len(schedules), 3.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(schedules), sharey=True))
    for ax, k in zip(axes, schedules, strict=True):
        trained, years, matrix, chance = accuracy_matrix(runs, k)
        for j, y in enumerate(years):
            ax.plot(trained, matrix[:, j], "o-", ms=3, label=str(y))
        ax.axhline(chance, color="grey", lw=0.8, ls=":")
        ax.set(title=f"{k.schedule} (hist_share {k.hist_share:g})",
               xlabel="trained through year", ylabel="dated cloze accuracy")
    axes[0].legend(title="question year", fontsize=6, title_fontsize=7, ncol=2, loc="upper left")
    path = figures_dir / "per_year_accuracy.png"
    fig.savefig(path, dpi=110)
    return [("Per-year accuracy over training (mean over seeds; generated world)", path)]


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    runs = collect(results)
    if not runs:
        return Analysis(notes=["no trial reported"], claims=[claims.missing_claim(
            "sequential vs shuffled pretraining", "paired over seeds", "-", "no trial",
            scope="no trial reported: no data, no hardware")])
    size = claim_size(runs)
    h = claim_share(runs, size)
    pair = [Cell("sequential", h, *size), Cell("shuffled", h, *size)] if size else []
    where = scope(runs, pair or list(runs))
    rows = claim_rows(runs, size, h, where) if size else [claims.missing_claim(
        "T1-T6: sequential vs shuffled", "paired over seeds", "sequential - shuffled",
        "sequential and shuffled not run at one size and hist_share", scope=where)]
    summary = {f"{k.schedule} h={k.hist_share:g} steps={k.steps_per_year} d={k.d_model}":
               float(np.mean([x["eval/acc_last"] for x in v.values()]))
               for k, v in runs.items()}
    cooldown = cooldown_table(runs, pair)
    tables = [final_table(runs), arms_table(runs, size), per_year_table(runs),
              *([year_error_table(runs, pair)] if pair else []),
              *forgetting_tables(runs, pair), *([cooldown] if cooldown else [])]
    sizes = sorted({k.size for k in runs})
    notes = ["a generated world: the claims test the effect of order on facts built in, not "
             "Common Crawl"]
    if len(sizes) > 1 and size:
        notes.append(f"{len(sizes)} sizes in this run; the claims read the largest, "
                     f"{size[0]} steps/year, d {size[1]} x {size[2]} layers")
    return Analysis(tables=tables, figures=figure(runs, pair, figures_dir),
                    summary={"acc_last": summary}, claims=[*rows, *not_run_rows(runs, size)],
                    notes=notes)
