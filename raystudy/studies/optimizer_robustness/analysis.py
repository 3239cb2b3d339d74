"""The optimizer_robustness study's report: the robustness table and loss-vs-learning-rate
figure of ``curves.py`` and the claims (the ``analyze`` hook of its Study).

The claims, each paired over seeds:

* the paper's: each Momo variant's robust width minus MuonAdam's (Holm over the two);
* the abstract's other two sentences: MuonMax's width minus MuonAdam's ("Muon is
  sensitive to the learning rate, MuonMax significantly more robust"), and each Momo
  variant's best loss over the grid minus MuonAdam's ("often achieve a better validation
  score");
* the paper's scale (GPT-2 on FineWeb) as *not run* unless the run trained it.

A width is read on the run's learning-rate grid, so two preconditions come first: the
compared optimizers share one log grid no coarser than :data:`GRID_STEP_DECADES`, and
MuonAdam's near-best range (or best point) lies inside the grid, not cut by its edge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from raystudy import Analysis, Claim, RunResults, Table, TrialRecord, claims
from raystudy.algorithms import stats
from raystudy.studies.optimizer_robustness import curves

CLAIM = ("MuonMax-Momo and MuonAdam-Momo stay near the best loss over a wider learning-rate "
         "range than MuonAdam, which needs precise tuning")
MUONMAX_CLAIM = ("MuonMax stays near the best loss over a wider learning-rate range than "
                 "MuonAdam (the abstract: Muon is sensitive to the learning rate, MuonMax "
                 "significantly more robust)")
BEST_LOSS_CLAIM = ("The Momo variants reach a lower best validation loss than MuonAdam (the "
                   "abstract: they often achieve a better validation score)")
MOMO_VARIANTS = ("muonmax_momo", "muon_adam_momo")
BASELINE = "muon_adam"
TOLERANCE = 0.10
"""Near the best: within 10 % of the seed's best loss over all optimizers."""
GRID_STEP_DECADES = 0.5
"""The coarsest learning-rate grid a width is read on: half a decade, the step of the
paper's grid (1e-5 .. 1e-1, 9 points) and of the shipped spaces. A width is a whole
number of grid steps, so widths that differ by less than a step tie at the grid's
resolution, and a tie is no evidence either way."""
GRID_STEP_SLACK = 1e-3
"""Decades a step may exceed GRID_STEP_DECADES by: a ``loggrid``'s points are rounded to 4
significant digits, which moves a half-decade step by up to 1e-4 decade."""
PAPER_SCALE = ("GPT-2 small (124M) and large on FineWeb / SlimPajama tokens, learning rates "
               "1e-5 .. 1e-1, several seeds")

Curves = dict[int, dict[str, dict[float, float]]]
"""``{seed: {optimizer: {learning rate: final loss}}}`` (diverged = inf)."""



def _values(trials: list[TrialRecord], key: str, default: Any) -> str:
    """The distinct values of a config key over the trials, joined by '/'."""
    return "/".join(sorted({str(t.setting(key, default)) for t in trials}))


def run_scope(results: RunResults) -> str:
    """What the verdicts hold for: the corpus (a stand-in for FineWeb unless token files
    were read), the model, the training length and the hardware."""
    trials = [t for t in results.trials if t.status in ("finished", "diverged")]
    sources = {str(t.setting("data.source", "stdlib")) for t in trials}
    data = []
    if "stdlib" in sources:
        data.append("Python's standard-library sources as bytes (a stand-in for FineWeb, "
                    "not FineWeb)")
    if "tokens" in sources:
        data.append(f"token files at {_values(trials, 'data.path', '')}")
    if sources - {"stdlib", "tokens"}:
        data.append("local text files as bytes (a stand-in for FineWeb)")
    request = getattr(results, "request", None) or {}
    gpus = float((request.get("compute") or {}).get("gpus_per_worker", 0) or 0)
    hardware = "GPU" if gpus > 0 else f"CPU, train.threads={_values(trials, 'train.threads', 1)}"
    return (f"{'; '.join(data) or 'no finished trial'}; GPT of "
            f"{_values(trials, 'model.n_layers', 2)} blocks x "
            f"{_values(trials, 'model.d_model', 64)} wide, "
            f"{_values(trials, 'train.steps', 120)} steps of batch "
            f"{_values(trials, 'train.batch_size', 16)} x "
            f"{_values(trials, 'model.seq_len', 64)} tokens; {hardware}")


def _paired_seeds(by_seed: Curves, method: str) -> list[int]:
    """The seeds that ran both ``method`` and MuonAdam."""
    return [s for s, groups in sorted(by_seed.items()) if method in groups and BASELINE in groups]


def grid_step(xs: Sequence[float]) -> float:
    """The largest step between neighbouring learning rates, in decades (nan below two)."""
    return float(np.max(np.diff(np.log10(xs)))) if len(xs) > 1 else math.nan


def grid_resolves(by_seed: Curves, method: str) -> claims.Precondition:
    """The method and MuonAdam share one learning-rate grid on every paired seed, with a
    step no coarser than GRID_STEP_DECADES."""
    seeds = _paired_seeds(by_seed, method)
    grids = {tuple(sorted(by_seed[s][g])) for s in seeds for g in (method, BASELINE)}
    statement = (f"{method} and {BASELINE} share one learning-rate grid with a step of at "
                 f"most {GRID_STEP_DECADES:g} decade")
    if len(grids) != 1:
        return claims.Precondition(statement, False, f"{len(grids)} different grids over "
                                   f"{len(seeds)} paired seeds")
    (xs,) = grids
    step = grid_step(xs)
    return claims.Precondition(
        statement, bool(step <= GRID_STEP_DECADES + GRID_STEP_SLACK),
        f"{len(xs)} learning rates {xs[0]:.3g} .. {xs[-1]:.3g}, largest step {step:.3g} "
        f"decade, the same for both on {len(seeds)} seeds")


def _seed_threshold(groups: dict[str, dict[float, float]]) -> float:
    """Near-best on one seed: within TOLERANCE of its best loss over all optimizers."""
    finite = [v for pts in groups.values() for v in pts.values() if math.isfinite(v)]
    return min(finite) * (1 + TOLERANCE) if finite else -math.inf


def baseline_inside_grid(by_seed: Curves, seeds: Sequence[int], what: str
                         ) -> claims.Precondition:
    """MuonAdam's near-best range (``what="range"``) or best point (``"best"``) is not at
    the grid's edge on any seed: there it could reach past the grid, and comparing a cut
    value would overstate the other optimizer's lead."""
    at_edge = []
    for seed in seeds:
        points = by_seed[seed][BASELINE]
        xs, losses = list(points), list(points.values())
        if what == "range":
            span = curves.robust_span(xs, losses, _seed_threshold(by_seed[seed]))
            cut = span is not None and (span[0] == 0 or span[1] == len(xs) - 1)
        else:
            finite = [i for i, v in enumerate(losses) if math.isfinite(v)]
            best = min(finite, key=losses.__getitem__) if finite else None
            cut = best is not None and best in (0, len(xs) - 1)
        if cut:
            at_edge.append(seed)
    name = "near-best range" if what == "range" else "best learning rate"
    return claims.Precondition(
        f"{BASELINE}'s {name} lies inside the learning-rate grid on every seed (a value cut "
        "at the grid's edge would overstate the other optimizer's lead)", not at_edge,
        f"at the grid's edge on {len(at_edge)} of {len(seeds)} seeds"
        + (f" (seeds {at_edge})" if at_edge else ""))


def _width_test(by_seed: Curves, widths: dict[str, dict[int, float]], method: str,
                statement: str, scope: str) -> claims.Test:
    """``method``'s per-seed robust width against MuonAdam's, with the grid's preconditions."""
    seeds = [s for s in _paired_seeds(by_seed, method) if s in widths[method]
             and s in widths[BASELINE]]
    mine, base = [widths[method][s] for s in seeds], [widths[BASELINE][s] for s in seeds]
    ties = sum(1 for a, b in zip(mine, base, strict=True) if a == b)
    steps = {grid_step(list(by_seed[s][g])) for s in seeds for g in (method, BASELINE)}
    step = max(steps) if steps else math.nan
    return claims.Test(
        statement, f"{method} width - {BASELINE} width (decades; grid step {step:.2g} decade, "
        "the resolution of a width)", stats.paired_comparison(mine, base), "greater",
        note=f"robust width per seed against that seed's best loss (within "
             f"{TOLERANCE:.0%}); {ties} of {len(seeds)} seeds tie at the grid's resolution, "
             "and a tie is no evidence either way",
        scope=scope, preconditions=(grid_resolves(by_seed, method),
                                    baseline_inside_grid(by_seed, seeds, "range")))


def _best_loss_test(by_seed: Curves, method: str, scope: str) -> claims.Test:
    """``method``'s best loss over the grid against MuonAdam's, per seed."""
    seeds = _paired_seeds(by_seed, method)

    def best(seed: int, group: str) -> float:
        """The lowest finite final loss of ``group`` over the grid on ``seed``."""
        finite = [v for v in by_seed[seed][group].values() if math.isfinite(v)]
        return min(finite) if finite else math.nan

    return claims.Test(
        f"{BEST_LOSS_CLAIM} ({method})", f"best validation loss over the grid: {method} - "
        f"{BASELINE}", stats.paired_comparison([best(s, method) for s in seeds],
                                                [best(s, BASELINE) for s in seeds]), "less",
        note="each optimizer's lowest final loss over the learning-rate grid, per seed",
        scope=scope, preconditions=(grid_resolves(by_seed, method),
                                    baseline_inside_grid(by_seed, seeds, "best")))


def robustness_claims(by_seed: Curves, widths: dict[str, dict[int, float]], scope: str
                      ) -> tuple[list[Claim], Table]:
    """The width and best-loss claims over ``{seed: {optimizer: {lr: loss}}}`` curves and
    their per-seed robust ``widths`` (``curves.widths_by_seed``).

    Returns the claims and the per-seed widths table.
    """
    seeds = sorted({s for w in widths.values() for s in w})
    table = Table("Robust width per seed (decades)", ["optimizer", *map(str, seeds)],
                  [[g, *(w.get(s, math.nan) for s in seeds)] for g, w in sorted(widths.items())],
                  note="each seed against its own best loss over all optimizers (within 10 %); "
                       "no point within: 0")
    present = [m for m in MOMO_VARIANTS if m in widths]
    effect = f"width - {BASELINE}'s (decades)"
    if BASELINE not in widths or not present:
        missing = [m for m in (BASELINE, *MOMO_VARIANTS) if m not in widths]
        why = f"not in this run: {', '.join(missing)}"
        return [claims.missing_claim(CLAIM, "paired over seeds", effect, why, scope=scope),
                claims.missing_claim(BEST_LOSS_CLAIM, "paired over seeds",
                                     f"best loss - {BASELINE}'s", why, scope=scope)], table
    out = claims.holm_family([_width_test(by_seed, widths, m, f"{CLAIM} ({m})", scope)
                              for m in present],
                             f"{len(present)} Momo variants")
    if "muonmax" in widths:
        test = _width_test(by_seed, widths, "muonmax", MUONMAX_CLAIM, scope)
        out.append(claims.paired_claim(test.statement, test.effect, test.result,
                                       test.direction, test.note, scope=scope,
                                       preconditions=test.preconditions))
    else:
        out.append(claims.not_run(MUONMAX_CLAIM, "muonmax on the same grid and seeds",
                                  "muonmax is not in this run (spaces default and all run it)"))
    out += claims.holm_family([_best_loss_test(by_seed, m, scope) for m in present],
                              f"{len(present)} Momo variants")
    return out, table


def paper_scale_rows(results: RunResults) -> list[Claim]:
    """The paper's scale as *not run* unless a trial trained a GPT-2-sized model on tokens."""
    trained = [t for t in results.trials if t.status == "finished"
               and t.setting("data.source", "stdlib") == "tokens"
               and int(t.setting("model.d_model", 64)) >= 768]
    if trained:
        return []
    return [claims.not_run(f"{CLAIM}, at the paper's scale", PAPER_SCALE,
                           "this run trained a small byte-level GPT on a stand-in corpus; the "
                           "paper profile (GPT-2 small on token files at data.path) trains "
                           "the paper's model")]


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    """Robustness table, loss-vs-learning-rate figure and the claims, over optimizer x lr x
    seed (each claim pairs an optimizer's per-seed width or best loss with MuonAdam's)."""
    points = curves.collect(results, group="optimizer.name", x="optimizer.lr",
                                metric="eval/loss")
    analysis = curves.analyze_curves(points, figures_dir, metric="eval/loss",
                                     group_label="optimizer", x_label="learning rate")
    if points:
        by_seed = curves.collect_by_seed(results, group="optimizer.name", x="optimizer.lr",
                                         metric="eval/loss", seed="train.seed")
        widths = curves.widths_by_seed(by_seed, TOLERANCE)
        analysis.claims, table = robustness_claims(by_seed, widths, run_scope(results))
        analysis.tables.append(table)
        analysis.summary["widths_by_seed"] = widths
    analysis.claims += paper_scale_rows(results)
    return analysis
