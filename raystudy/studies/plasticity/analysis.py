"""The plasticity study's report: the Claim rows (each L2-ER family's late-task score
against a full reset's, paired over seeds, Holm over streams and families), per-task
curves with seed bands, late-task performance relative to a full reset, and the claim
test per stream (R^2 of epsilon-rank vs accuracy
at a fixed eps chosen in advance and at the post-hoc best eps, which falls first, L2-ER
vs reset), with the verdicts written out as notes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from raystudy import Analysis, Claim, Table
from raystudy.algorithms import stats
from raystudy.algorithms.plasticity.analysis import Run, claim_test, late_stats
from raystudy.algorithms.plasticity.plots import plot_claim, plot_per_task, plot_relative
from raystudy.studies import claims
from raystudy.studies.plasticity.interventions import method_of

CLAIM = "L2-ER keeps late-task performance at or above a full reset at every task change"
FAMILIES = ("l2_er", "l2_er_penalty")


def stream_label(flat: dict[str, Any]) -> str:
    if flat["stream.kind"] == "rl":
        return f"rl {flat['rl.env']}"
    return f"{flat['stream.kind']} {flat['stream.dataset']}"


def collect_runs(results) -> list[Run]:
    runs = []
    for trial in results.trials:
        # one row per task: a resumed trial re-reports the tasks after its last checkpoint
        last = {r["task/index"]: r for r in trial.history if "task/index" in r}
        rows = [last[t] for t in sorted(last)]
        if rows and trial.config:
            spec = str(trial.config["intervention.spec"])
            runs.append(Run(trial.trial_id, trial.status, stream_label(trial.config), spec,
                            method_of(spec), int(trial.config["train.seed"]),
                            float(trial.config["metrics.eps"]), rows))
    return runs


def _verdict(stream: str, claim: dict[str, Any]) -> list[str]:
    notes = [f"{stream}: at eps = {claim['eps']:g} (fixed before any run) the start-of-task "
             f"epsilon-rank explains R^2 = {claim['r2_fixed']:.2f} of the end-of-task score "
             f"across interventions and tasks ({claim['points']} seed-mean points, slope "
             f"{claim['slope_fixed']:+.3g}); the post-hoc best eps = {claim['best_eps']:g} "
             f"gives R^2 = {claim['r2_best']:.2f}; the relative epsilon-rank (threshold "
             f"rel_eps x |lambda|_max) gives R^2 = {claim['r2_relative']:.2f}."]
    o = claim["onsets"]
    fell = o["eps_first"] + o["same"] + o["score_first"]
    notes.append(f"{stream}: of the runs whose score and epsilon-rank both fell (by half their "
                 f"fall), the epsilon-rank fell first in {o['eps_first']}, at the same task in "
                 f"{o['same']} and later in {o['score_first']} (of {fell}); only the "
                 f"epsilon-rank fell in {o['eps_only']}, only the score in {o['score_only']}, "
                 f"neither in {o['neither']}.")
    for family, v in claim["l2er_vs_reset"].items():
        notes.append(f"{stream}: {family} ({v['spec']}, best strength) late score "
                     f"{v['late']:.3g} +- {v['late_std']:.2g} vs reset {v['reset']:.3g} +- "
                     f"{v['reset_std']:.2g}: difference of means {v['difference']:+.3g} "
                     "(the paired test over seeds is in the Claim section).")
    return notes


def _by_seed(runs: list[Run]) -> dict[int, float]:
    """Late score per seed (mean over a seed's runs, finite ones)."""
    out: dict[int, list[float]] = {}
    for run in runs:
        if math.isfinite(run.late):
            out.setdefault(run.seed, []).append(run.late)
    return {seed: float(np.mean(v)) for seed, v in out.items()}


def l2er_claims(streams: dict[str, dict[str, list[Run]]]) -> list[Claim]:
    """Per stream and L2-ER family: the best strength's late score minus reset's, paired
    over the seeds both ran, Holm over every (stream, family) tested."""
    tests, specs = {}, {}
    for stream, groups in sorted(streams.items()):
        reset = _by_seed([r for rs in groups.values() for r in rs if r.method == "reset"])
        for family in FAMILIES:
            options = {spec: late_stats(rs)[0] for spec, rs in groups.items()
                       if rs[0].method == family and math.isfinite(late_stats(rs)[0])}
            if not options or not reset:
                continue
            spec = max(options, key=options.get)
            mine = _by_seed(groups[spec])
            seeds = sorted(set(mine) & set(reset))
            tests[stream, family] = stats.paired_comparison([mine[s] for s in seeds],
                                                            [reset[s] for s in seeds])
            specs[stream, family] = spec
    if not tests:
        return [claims.missing_claim(CLAIM, "paired over seeds", "late score: L2-ER - reset",
                                     "no stream ran both L2-ER and a full reset")]
    adjusted = stats.holm([t.p_value for t in tests.values()])
    return [claims.paired_claim(
        f"{CLAIM} ({stream}, {family})", "late score: L2-ER - reset", result, "greater",
        note=f"{stream}: {specs[stream, family]}, the strength with the best mean late score "
             "(chosen after the runs); supported means above reset, and an interval around 0 "
             "cannot tell at from below", p_value=p,
        family=f"{len(tests)} stream x family tests")
        for ((stream, family), result), p in zip(tests.items(), adjusted, strict=True)]


def analyze(results, figures_dir: Path) -> Analysis:
    """Per-task curves, late performance vs reset, and the claim test, per stream."""
    runs = collect_runs(results)
    if not runs:
        return Analysis(notes=["no trial reported a finished task yet: nothing to plot"])
    streams: dict[str, dict[str, list[Run]]] = {}
    for run in runs:
        streams.setdefault(run.stream, {}).setdefault(run.spec, []).append(run)
    rows, summary, notes, figures, claim_rows = [], {"streams": {}}, [], [], []
    for stream, groups in sorted(streams.items()):
        reset = [r for rs in groups.values() for r in rs if r.method == "reset"]
        base = late_stats(reset)[0]
        summary["streams"][stream] = {"interventions": {}}
        for spec, group in sorted(groups.items(), key=lambda kv: -late_stats(kv[1])[0]):
            mean, std = late_stats(group)
            last = [r.rows[-1] for r in group]
            entry = {
                "late": mean, "late_std": std,
                "relative_to_reset": mean / base if math.isfinite(base) and base else math.nan,
                "first_task": float(np.mean([r.rows[0]["task/score"] for r in group])),
                "tasks": int(np.mean([len(r.rows) for r in group])),
                "erank_end": float(np.mean([x.get("features/erank", math.nan) for x in last])),
                "dead_end": float(np.mean([x.get("features/dead", math.nan) for x in last])),
                "eps_rank_end": float(np.nanmean([r.series("hessian/eps_rank")[1][-1]
                                                  if len(r.series("hessian/eps_rank")[1])
                                                  else math.nan for r in group])),
                "seeds": len(group),
                "not_finished": sum(r.status != "finished" for r in group)}
            summary["streams"][stream]["interventions"][spec] = entry
            rows.append([stream, spec, entry["late"], entry["late_std"],
                         entry["relative_to_reset"], entry["first_task"], entry["erank_end"],
                         entry["eps_rank_end"], entry["dead_end"], entry["tasks"],
                         entry["seeds"], entry["not_finished"]])
        if any(len(r.series("hessian/eps_rank")[0]) for rs in groups.values() for r in rs):
            claim = claim_test(groups, next(iter(groups.values()))[0].eps)  # this stream's eps
            summary["streams"][stream]["claim"] = claim
            notes += _verdict(stream, claim)
            o, v = claim["onsets"], claim["l2er_vs_reset"].get("l2_er", {})
            claim_rows.append([stream, claim["eps"], claim["r2_fixed"], claim["slope_fixed"],
                               claim["best_eps"], claim["r2_best"], claim["r2_relative"],
                               claim["points"],
                               f"{o['eps_first']}/{o['same']}/{o['score_first']}",
                               v.get("spec", "-"), v.get("difference", math.nan)])
            slug = stream.replace(" ", "_").replace("-", "_").lower()
            figures.append((f"claim test: {stream}", plot_claim(
                stream, groups, claim, figures_dir / f"claim_{slug}.png")))
    figures.insert(0, ("score per task (seed mean +- std)", plot_per_task(
        streams, [("task/score", "{score}")], figures_dir / "scores.png",
        "score per task by intervention (band: seed std)")))
    figures.insert(1, ("spectra and feature ranks per task", plot_per_task(
        streams, [("hessian/eps_rank", "Hessian epsilon-rank at task start (%)"),
                  ("features/erank", "feature effective rank (mean over layers)")],
        figures_dir / "spectra.png", "epsilon-rank (fixed eps) and feature effective rank")))
    figures.insert(2, ("late-task score relative to full reset", plot_relative(
        streams, figures_dir / "late_vs_reset.png")))
    tables = [Table("Late-task performance", [
        "stream", "intervention", "late score", "std", "/ reset", "first task", "erank (end)",
        "eps-rank (end, %)", "dead units (end)", "tasks", "seeds", "not finished"], rows,
        note="late score: mean end-of-task score over the last metrics.late_fraction of the "
             "tasks, averaged over seeds; score = accuracy (supervised) or return (RL)")]
    if claim_rows:
        tables.append(Table("Claim test", [
            "stream", "fixed eps", "R^2 (fixed eps)", "slope", "best eps (post hoc)",
            "R^2 (best eps)", "R^2 (relative eps)", "points",
            "eps-rank falls first/same/later", "best L2-ER",
            "L2-ER - reset"], claim_rows,
            note="points: seed-mean (epsilon-rank at task start, score at task end) per "
                 "intervention and measured task, reset and the first task left out"))
    return Analysis(tables=tables, figures=figures, summary=summary, notes=notes,
                    claims=l2er_claims(streams))
