"""The plasticity study's report: the Claim rows (each L2-ER family's late-task score
against a full reset's, the strength chosen on held-out seeds and compared on the others,
paired over seeds, Holm over streams and families), per-task curves with seed bands (the
end-of-task and the online score), the score by task window (what the late-window mean
hides), late-task performance relative to a full reset, and the claim test per stream
(R^2 of the online score on the epsilon-rank at a fixed eps chosen in advance, at the
post-hoc best eps and for each variant; which falls first on aligned series; L2-ER vs
reset), with the verdicts written out as notes.

An L2-ER row is read only when the comparison means something (else "precondition
failed"): plain training ("none") learned the first task above chance and then lost
plasticity on that stream, and the reset learns the late tasks. Each row's scope names its
stream, a stand-in where it is one (digits for the paper's image benchmarks, changing
CartPole for Slippery Ant); the paper's benchmarks this run had no stream of are rows
*not run*.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from raystudy import Analysis, Claim, Table, claims
from raystudy.algorithms import stats
from raystudy.studies.plasticity.curves import (
    ONLINE,
    SCORE,
    Run,
    claim_test,
    late_by_seed,
    late_stats,
    mean_curve,
    select_strength,
)
from raystudy.studies.plasticity.interventions import method_of
from raystudy.studies.plasticity.plots import plot_claim, plot_per_task, plot_relative

CLAIM = "L2-ER keeps late-task performance at or above a full reset at every task change"
FAMILIES = ("l2_er", "l2_er_penalty")
CLASSES = {"digits": 10, "mnist": 10, "cifar10": 10, "cifar100": 100}
"""Classes of each supervised dataset: chance accuracy is one over them (incremental
streams: one over the classes seen so far)."""
CHANCE_MARGIN = 0.10
"""A supervised arm learns a task when its accuracy is 10 points above chance."""
RANDOM_POLICY_RETURN = {"CartPole-v1": (22.7, 11.4), "Acrobot-v1": (-497.1, 19.1),
                        "Ant-v5": (-19.5, 30.0)}
"""Mean and sd of a uniformly random policy's episode return, the RL streams' chance
level: gymnasium 1.4, default physics, 200 / 100 / 20 episodes from reset seeds 0, 1, ...
(measured 2026-12-05; the snippet is in docs/plasticity.md)."""
RANDOM_POLICY_SDS = 3.0
"""An RL arm learns a task when its return is 3 random-policy sds above the random mean."""
MIN_PLASTICITY_LOSS = 0.10
"""Plasticity is lost when plain training ("none") gives up at least 10 % of its
first-task skill above chance by the late tasks: without that loss there is nothing for
L2-ER or a reset to preserve, and "L2-ER at or above reset" says nothing about plasticity."""
PAPER_BENCHMARKS = {
    "Permuted MNIST (800 tasks, 3 x 1000 MLP, SGD batch 1)":
        ("permuted", "mnist", "--profile paper with MNIST's files at stream.path"),
    "Continual ImageNet (2,000 binary tasks, small ConvNet)":
        ("imagenet", "", "this study has no ImageNet loader"),
    "class-incremental CIFAR-100 (20 tasks of 5 classes)":
        ("incremental", "cifar100", "--set stream.kind=incremental stream.dataset=cifar100 "
         "model.arch=convnet with CIFAR-100's files at stream.path"),
    "Slippery Ant (MuJoCo Ant-v5, friction redrawn every 2M steps)":
        ("rl", "Ant-v5", "--profile slippery_ant, a cluster's job (20M steps per trial)")}
"""The paper's benchmarks: the (stream.kind, dataset or env) that runs each here, and how."""


def stream_label(flat: dict[str, Any]) -> str:
    """A stream's name in the report: ``random_labels digits``, ``rl CartPole-v1``."""
    if flat["stream.kind"] == "rl":
        return f"rl {flat['rl.env']}"
    return f"{flat['stream.kind']} {flat['stream.dataset']}"


def _stream_of(flat: dict[str, Any]) -> tuple[str, str]:
    """(stream.kind, the dataset or RL environment) of a trial's config."""
    kind = str(flat.get("stream.kind", "random_labels"))
    return kind, str(flat.get("rl.env" if kind == "rl" else "stream.dataset", ""))


def stream_scope(flat: dict[str, Any], tasks: int, hardware: str) -> str:
    """What a stream's verdicts hold for: its data (named as a stand-in where it is one),
    the length of the stream, the learner and the hardware."""
    kind, name = _stream_of(flat)
    if kind == "rl":
        if name == "Ant-v5":
            data = "Slippery Ant: MuJoCo Ant-v5 with its friction redrawn per task"
        else:
            data = (f"{name} with its physics and observation order redrawn per task: a "
                    "stand-in for Slippery Ant, not it")
        learner = f"PPO, {flat.get('rl.steps_per_task', 20000)} environment steps per task"
    else:
        words = {"random_labels": "with labels redrawn per task", "permuted":
                 "with pixels permuted per task", "incremental": "with classes added per task"}
        data = f"{name} {words.get(kind, kind)}"
        if name == "digits":
            data = (f"sklearn's 8x8 digits {words.get(kind, kind)}: a small stand-in for the "
                    "paper's Permuted MNIST and Continual ImageNet, not them")
        learner = (f"MLP {flat.get('model.hidden', '256,256')}, "
                   f"{flat.get('train.optimizer', 'adam')}, "
                   f"{flat.get('train.steps_per_task', 200)} steps per task")
    return f"{data}; {tasks} tasks; {learner}; {hardware}"


def chance_level(flat: dict[str, Any], task: int) -> tuple[float, float]:
    """(chance, margin) of a stream's score at ``task`` (from 1): one over the classes in
    play and CHANCE_MARGIN, or the random policy's mean return and RANDOM_POLICY_SDS of
    its sd; nan where unknown."""
    kind, name = _stream_of(flat)
    if kind == "rl":
        mean, sd = RANDOM_POLICY_RETURN.get(name, (math.nan, math.nan))
        return mean, RANDOM_POLICY_SDS * sd
    classes = CLASSES.get(name, 0)
    if kind == "incremental":
        classes = min(classes, task * int(flat.get("stream.classes_per_task", 2)))
    return (1.0 / classes if classes else math.nan), CHANCE_MARGIN


def _first_and_late(runs: list[Run]) -> tuple[float, float, int]:
    """Seed means of the first task's score and of the late score; the last task index."""
    first = [float(r.rows[0]["task/score"]) for r in runs
             if r.rows and int(r.rows[0]["task/index"]) == 1 and "task/score" in r.rows[0]]
    late = [r.late for r in runs if math.isfinite(r.late)]
    last = max((int(r.rows[-1]["task/index"]) for r in runs if r.rows), default=1)
    return (float(np.mean(first)) if first else math.nan,
            float(np.mean(late)) if late else math.nan, last)


def arm_learns(name: str, runs: list[Run], flat: dict[str, Any], late: bool
               ) -> claims.Precondition:
    """An arm's score above chance by the margin: on its first task, or (``late``) on the
    late tasks, seed means."""
    first, late_score, last = _first_and_late(runs)
    score, task = (late_score, last) if late else (first, 1)
    chance, margin = chance_level(flat, task)
    where = "the late tasks" if late else "its first task"
    return claims.Precondition(
        f"{name} learns {where}: score above chance by {margin:.3g}",
        math.isfinite(score) and math.isfinite(chance) and score >= chance + margin,
        f"{name} {score:.3g} over {len(runs)} seeds, chance {chance:.3g} (needs >= "
        f"{chance + margin:.3g})" if math.isfinite(chance) else
        f"no chance level known for this stream ({name} {score:.3g})")


def plasticity_lost(groups: dict[str, list[Run]], flat: dict[str, Any]
                    ) -> tuple[claims.Precondition, ...]:
    """Plain training ("none") learns the first task above chance and then loses
    plasticity: its late score gives up at least MIN_PLASTICITY_LOSS of that skill."""
    statement = (f"plain training loses plasticity: its late score gives up at least "
                 f"{MIN_PLASTICITY_LOSS:.0%} of its first-task skill above chance")
    plain = [r for rs in groups.values() for r in rs if r.method == "none"]
    if not plain:
        return (claims.Precondition(statement, False, "no plain ('none') arm in this run, so "
                                    "nothing shows a loss for L2-ER or a reset to prevent"),)
    first, late, _ = _first_and_late(plain)
    chance, _ = chance_level(flat, 1)
    skill = first - chance
    lost = (first - late) / skill if skill > 0 else math.nan
    return (arm_learns("plain training", plain, flat, late=False), claims.Precondition(
        statement, math.isfinite(lost) and lost >= MIN_PLASTICITY_LOSS,
        f"plain: first task {first:.3g}, late tasks {late:.3g}, chance {chance:.3g}: "
        f"{lost:.0%} of its skill lost over {len(plain)} seeds"))


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
    v = claim["r2_variants"]
    notes = [f"{stream}: at eps = {claim['eps']:g} (fixed before any run) the start-of-task "
             f"epsilon-rank (the authors' trapezoid rule) explains R^2 = {claim['r2_fixed']:.2f} "
             f"of the online score over the task across interventions and tasks "
             f"({claim['points']} seed-mean points, slope {claim['slope_fixed']:+.3g}); the "
             f"post-hoc best eps = {claim['best_eps']:g} gives R^2 = {claim['r2_best']:.2f}. "
             f"Variants at the same eps: grid-point sum R^2 = {v['riemann']:.2f}, quadrature "
             f"weights {v['quadrature']:.2f}; relative threshold (rel_eps x |lambda|_max): "
             f"quadrature (scale-invariant) {v['quadrature_relative']:.2f}, density "
             f"{v['relative']:.2f}."]
    o = claim["onsets"]
    fell = o["eps_first"] + o["same"] + o["score_first"]
    notes.append(f"{stream}: on the tasks where the Hessian was measured (task 1 left out, "
                 f"both series at that resolution), of the runs whose online score and "
                 f"epsilon-rank both fell (by half their fall), the epsilon-rank fell first in "
                 f"{o['eps_first']}, at the same task in {o['same']} and later in "
                 f"{o['score_first']} (of {fell}); only the epsilon-rank fell in "
                 f"{o['eps_only']}, only the score in {o['score_only']}, neither in "
                 f"{o['neither']}.")
    for family, v in claim["l2er_vs_reset"].items():
        chosen = (f"chosen on seeds {v['select_seeds']}" if v["select_seeds"]
                  else "the only strength run")
        notes.append(f"{stream}: {family} ({v['spec']}, {chosen}) late score on seeds "
                     f"{v['compare_seeds']} {v['late']:.3g} +- {v['late_std']:.2g} vs reset "
                     f"{v['reset']:.3g} +- {v['reset_std']:.2g}: difference of means "
                     f"{v['difference']:+.3g} (the paired test is in the Claim section).")
    return notes


def l2er_claims(streams: dict[str, dict[str, list[Run]]], configs: dict[str, dict[str, Any]],
                hardware: str) -> list[Claim]:
    """Per stream and L2-ER family: the strength chosen on held-out seeds, its late score
    minus reset's paired over the other seeds both ran, Holm over every (stream, family);
    each read only where plain training learned and then lost plasticity and the reset
    learns the late tasks (an L2-ER at chance against a learning reset is evidence against
    the claim, not a comparison that cannot be read)."""
    tests, scopes = [], []
    for stream, groups in sorted(streams.items()):
        flat = configs.get(stream, {})
        tasks = max(int(r.rows[-1]["task/index"]) for rs in groups.values() for r in rs)
        scope = stream_scope(flat, tasks, hardware)
        scopes.append(scope)
        resets = [r for rs in groups.values() for r in rs if r.method == "reset"]
        reset = late_by_seed(resets)
        for family in FAMILIES:
            chosen = select_strength(groups, family)
            if chosen is None or not reset:
                continue
            mine = late_by_seed(groups[chosen.spec])
            seeds = [s for s in chosen.compare_seeds if s in reset]
            how = (f"chosen on held-out seeds {chosen.select_seeds} (best mean late score "
                   f"there), compared on seeds {seeds}" if chosen.select_seeds
                   else f"the only strength run, compared on seeds {seeds}")
            tests.append(claims.Test(
                f"{CLAIM} ({stream}, {family})", "late score: L2-ER - reset",
                stats.paired_comparison([mine[s] for s in seeds], [reset[s] for s in seeds]),
                "greater", note=f"{stream}: {chosen.spec}, {how}; supported means above "
                "reset, and an interval around 0 cannot tell at from below", scope=scope,
                preconditions=(*plasticity_lost(groups, flat),
                               arm_learns("reset", resets, flat, late=True))))
    if not tests:
        return [claims.missing_claim(CLAIM, "paired over seeds", "late score: L2-ER - reset",
                                     "no stream ran both L2-ER and a full reset",
                                     scope=" | ".join(scopes) or hardware)]
    return claims.holm_family(tests, f"{len(tests)} stream x family tests")


def benchmarks_not_run(configs: dict[str, dict[str, Any]]) -> list[Claim]:
    """The paper's benchmarks this run had no stream of, as rows *not run*."""
    ran = {_stream_of(flat) for flat in configs.values()}
    return [claims.not_run(f"{CLAIM}, on {benchmark}", benchmark,
                           f"this run had no such stream ({how})")
            for benchmark, (kind, name, how) in PAPER_BENCHMARKS.items()
            if (kind, name) not in ran]


def windows(tasks: int, count: int = 6) -> list[tuple[int, int]]:
    """``count`` consecutive task windows (first, last) covering tasks 1..tasks."""
    edges = np.linspace(0, tasks, min(count, tasks) + 1).round().astype(int)
    return [(int(a) + 1, int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def window_rows(stream: str, groups: dict[str, list[Run]]) -> tuple[list[str], list[list]]:
    """The score by task window per intervention: seed-mean end-of-task score / online
    score over the task, averaged over each window's tasks (what one late mean hides)."""
    tasks = max(int(r.rows[-1]["task/index"]) for rs in groups.values() for r in rs)
    spans = windows(tasks)
    header = [f"tasks {a}-{b}" if a < b else f"task {a}" for a, b in spans]
    rows = []
    for spec, runs in sorted(groups.items()):
        cells = []
        for a, b in spans:
            parts = []
            for key in (SCORE, ONLINE):
                t, mean, _ = mean_curve(runs, key)
                inside = mean[(t >= a) & (t <= b)]
                parts.append(f"{inside.mean():.2f}" if len(inside) else "-")
            cells.append(" / ".join(parts))
        rows.append([stream, spec, *cells])
    return header, rows


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
            r2 = claim["r2_variants"]
            claim_rows.append([stream, claim["eps"], claim["r2_fixed"], claim["slope_fixed"],
                               claim["best_eps"], claim["r2_best"], r2["riemann"],
                               r2["quadrature"], r2["quadrature_relative"], claim["points"],
                               f"{o['eps_first']}/{o['same']}/{o['score_first']}",
                               v.get("spec", "-"), v.get("difference", math.nan)])
            slug = stream.replace(" ", "_").replace("-", "_").lower()
            figures.append((f"claim test: {stream}", plot_claim(
                stream, groups, claim, figures_dir / f"claim_{slug}.png")))
    figures.insert(0, ("score per task (seed mean +- std)", plot_per_task(
        streams, [(SCORE, "{score}"), (ONLINE, "{online}")],
        figures_dir / "scores.png",
        "score per task by intervention: at the task's end and online over it (band: seed "
        "std)")))
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
    for stream, groups in sorted(streams.items()):
        header, window_table = window_rows(stream, groups)
        tables.append(Table(f"Score by task window: {stream}", ["stream", "intervention",
                                                                *header], window_table,
                            note="seed mean of the end-of-task score / the online score "
                                 "over the task, averaged over each window's tasks "
                                 "(random labels: chance is 1 / classes)"))
    if claim_rows:
        tables.append(Table("Claim test", [
            "stream", "fixed eps", "R^2 (fixed eps)", "slope", "best eps (post hoc)",
            "R^2 (best eps)", "R^2 grid-point sum", "R^2 quadrature",
            "R^2 quadrature, relative eps", "points",
            "eps-rank falls first/same/later", "L2-ER (held-out choice)",
            "L2-ER - reset"], claim_rows,
            note="points: seed-mean (epsilon-rank at task start, online score over the "
                 "task) per intervention and measured task, reset and the first task left "
                 "out; R^2 columns without a name use the authors' trapezoid rule; onsets "
                 "on the measured tasks only"))
    configs = {stream_label(t.config): t.config for t in results.trials if t.config}
    request = getattr(results, "request", None) or {}
    gpus = float((request.get("compute") or {}).get("gpus_per_worker", 0) or 0)
    hardware = "GPU" if gpus > 0 else "CPU"
    return Analysis(tables=tables, figures=figures, summary=summary, notes=notes,
                    claims=l2er_claims(streams, configs, hardware) + benchmarks_not_run(configs))
