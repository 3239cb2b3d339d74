"""The contrastive_imitation study's report: the claim (DualCOIL minus each baseline's score,
paired over seeds, Holm over every mix x baseline; a row is read only where its baseline
learns, and its scope names generated data as a stand-in for D4RL; the paper's D4RL tasks
and training length this run did not cover are rows *not run*), the normalised score per
method and mix (mean +- std over seeds), the learning curves, the seed means of DualCOIL,
BC-on-all and the best baseline, the data mixes, and what DualCOIL's weights do with the
unlabeled set's hidden expert and other parts; which data and environment versions the
scores come from, and each method's settings with where they come from.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from raystudy import Analysis, Claim, RunResults, Table, TrialRecord, claims
from raystudy.algorithms import stats
from raystudy.algorithms.imitation import sources
from raystudy.studies.contrastive_imitation import comparison
from raystudy.studies.contrastive_imitation.config import SAC

CLAIM = ("DualCOIL, learning from a few good and bad demonstrations plus unlabeled data, "
         "scores above every baseline")
BASELINE_LEARNED_MARGIN = 10.0
"""A baseline learns when its mean normalised score is at least 10 points above the
random policy's (0 by the score's definition): beating a baseline that never left random
is no evidence that DualCOIL is better than the method."""
PAPER_TASKS = ("hopper", "halfcheetah", "walker2d", "ant")
"""The paper's D4RL MuJoCo tasks (each with random and medium undesirable data)."""
PAPER_STEPS = 1_000_000
PAPER_SCALE = ("1e6 gradient steps after 1e5 discriminator steps, batch 1024 per source, "
               "2 x 256 networks, 5 seeds")
REAL_SOURCES = ("d4rl", "minari")



def _imitation_trials(results: RunResults) -> list[TrialRecord]:
    """The finished trials of imitation methods (not the SAC expert trainer)."""
    return [t for t in results.trials if t.status == "finished"
            and str(t.setting("method", "")) != SAC]


def _joined(trials: list[TrialRecord], key: str, default: Any) -> str:
    """The distinct values of a config key over the trials, joined by '/'."""
    return "/".join(sorted({str(t.setting(key, default)) for t in trials}))


def run_scope(results: RunResults) -> str:
    """The data (generated stand-in, D4RL files or Minari datasets, and the environment
    that scores them), the training length and sizes, and the hardware."""
    trials = _imitation_trials(results)
    data = []
    for source, task in sorted({(str(t.setting("data.source", "generate")),
                                 str(t.setting("data.task", "pendulum"))) for t in trials}):
        env = sources.env_id(task, source) if task in sources.TASKS else task
        if source == "generate":
            data.append(f"generated {env} data (expert and random policies rolled out here): "
                        "a stand-in for D4RL's MuJoCo datasets, not D4RL; scores normalised "
                        "by this data's own random and expert returns")
        elif source == "d4rl":
            data.append(f"D4RL-format files of {task}, evaluated in gymnasium's {env}")
        else:
            data.append(f"Minari datasets of {task}, evaluated in gymnasium's {env}")
    request = getattr(results, "request", None) or {}
    gpus = float((request.get("compute") or {}).get("gpus_per_worker", 0) or 0)
    return (f"{'; '.join(data) or 'no finished trial'}; "
            f"{_joined(trials, 'train.steps', 6000)} gradient steps, batch "
            f"{_joined(trials, 'train.batch_size', 256)} per source, "
            f"{_joined(trials, 'train.layers', 2)} x {_joined(trials, 'train.hidden', 128)} "
            f"networks; {'GPU' if gpus > 0 else 'CPU'}")


def baseline_learns(method: str, scores: dict[int, float]) -> claims.Precondition:
    """The baseline's mean score is BASELINE_LEARNED_MARGIN above the random policy's."""
    values = [v for v in scores.values() if math.isfinite(v)]
    mean = float(np.mean(values)) if values else math.nan
    return claims.Precondition(
        f"{method} learns: its mean normalised score is at least "
        f"{BASELINE_LEARNED_MARGIN:g} above the random policy's (0)",
        bool(values) and mean >= BASELINE_LEARNED_MARGIN,
        f"{method} {mean:.1f} over {len(values)} seeds" if values else f"no {method} score")


def dualcoil_claims(by_seed: dict[str, dict[str, dict[int, float]]], scope: str
                    ) -> list[Claim]:
    """Per mix and baseline (not a hidden-label reference): DualCOIL's final score minus the
    baseline's on the same seed, paired over seeds, Holm over every mix x baseline; each
    read only where the baseline learns."""
    tests = []
    for mix, methods in sorted(by_seed.items()):
        ours = methods.get("dualcoil", {})
        for method in comparison._ordered(methods):
            if method in ("dualcoil", *comparison.REFERENCES) or not ours:
                continue
            seeds = sorted(set(ours) & set(methods[method]))
            tests.append(claims.Test(
                f"{CLAIM} (mix {mix}, vs {method})", f"normalised score: DualCOIL - {method}",
                stats.paired_comparison([ours[s] for s in seeds],
                                        [methods[method][s] for s in seeds]), "greater",
                preconditions=(baseline_learns(method, methods[method]),)))
    if not tests:
        return [claims.missing_claim(CLAIM, "paired over seeds", "score: DualCOIL - baseline",
                                     "no mix ran DualCOIL and a baseline", scope=scope)]
    return claims.holm_family(tests, f"{len(tests)} mix x baseline tests", scope=scope)


def regimes_not_run(results: RunResults) -> list[Claim]:
    """The paper's D4RL tasks this run read no real data of, and its training length when
    the run trained less, as rows *not run*."""
    trials = _imitation_trials(results)
    real = {str(t.setting("data.task", "pendulum")) for t in trials
            if str(t.setting("data.source", "generate")) in REAL_SOURCES}
    rows = [claims.not_run(
        f"{CLAIM}, on D4RL {task} (random and medium undesirable data)",
        f"D4RL {task}-v2 (expert, random and medium data), the paper's benchmark",
        f"this run read no real {task} data: put D4RL's {task}_{{expert,random,medium}}-v2"
        f".hdf5 under data.root and run --profile paper --set data.task={task}")
        for task in PAPER_TASKS if task not in real]
    steps = max((int(t.setting("train.steps", 6000)) for t in trials), default=0)
    if steps < PAPER_STEPS:
        rows.append(claims.not_run(
            f"{CLAIM}, at the paper's training length", PAPER_SCALE,
            f"this run trained at most {steps:,} gradient steps; the paper profile trains "
            "1e6 (a cluster's job)"))
    return rows


V5_VS_D4RL = ("Walker2d-v5 and Ant-v5 differ from the v2 environments D4RL's data came "
              "from (Walker2d-v5 gives both feet friction 1.9, v2's right foot had 0.9; "
              "Ant-v5 has 105 observation dimensions vs D4RL's 111)")


def data_note(source: str, task: str) -> str:
    """Which data the scores come from and which environment version evaluates them."""
    env = sources.TASKS.get(task, task)
    mujoco = task in ("hopper", "halfcheetah", "walker2d", "ant")
    if source == "generate":
        text = (f"Data: generated here in gymnasium's {env}, the environment evaluation runs "
                "in; scores are normalised by this data's own random and expert returns, so "
                "they are not D4RL scores.")
        return f"{text} {V5_VS_D4RL}." if mujoco else text
    if source == "minari":
        text = (f"Data: Minari datasets, collected in gymnasium's {env}, the environment "
                "evaluation runs in; not D4RL's v2 data.")
        return f"{text} {V5_VS_D4RL}." if mujoco else text
    env = sources.env_id(task, "d4rl") if task in sources.TASKS else task
    text = (f"Data: D4RL-format HDF5 files (D4RL's own are v2, collected in the v2 MuJoCo "
            f"environments of gym + mujoco-py); evaluation runs in gymnasium's {env}.")
    if task == "walker2d":
        text += (" Walker2d-v5 differs from D4RL's Walker2d-v2 (both feet friction 1.9; "
                 "v2's right foot 0.9): the policy is scored in a slightly different "
                 "environment than its data came from.")
    if task == "ant":
        text += (" Ant-v4 with contact forces has the 111 observation dimensions of D4RL's "
                 "ant data (Ant-v5 has 105).")
    return text


SETTINGS = {  # method: (config keys, where the values come from when left at their defaults)
    "dualcoil": (("dualcoil.preset", "dualcoil.alpha", "dualcoil.c", "dualcoil.beta",
                  "dualcoil.actor_q_scale", "dualcoil.weight_decay", "dualcoil.tau"),
                 "the paper's per-environment constants (preset) or, without a preset, its "
                 "values for every task but Hopper; not tuned here"),
    "demodice": (("baselines.demodice_alpha",), "DemoDICE paper (alpha 0.05); not tuned"),
    "safedice": (("baselines.safedice_alpha",),
                 "alpha: the unlabeled set's share of undesirable transitions (SafeDICE "
                 "paper's mixture weight), computed from the composed data; reward "
                 "standardised over the whole unlabeled set (authors' code); not tuned"),
    "dwbc": (("baselines.dwbc_alpha", "baselines.dwbc_eta"),
             "DWBC authors' run_dwbc.sh (alpha 10, eta 0.5); not tuned"),
    "bc_all": ((), "no method constants"),
    "bc_good": ((), "no method constants"),
    "bc_oracle": ((), "no method constants (hidden-label reference)"),
}
SHARED = ("train.steps", "train.disc_steps", "train.batch_size", "train.hidden",
          "train.layers", "train.lr")


def settings_table(results: RunResults) -> Table:
    """Each method's constants as the trials ran them, and where they come from."""
    seen: dict[str, dict[str, set]] = {}
    for trial in results.trials:
        method = str(trial.config.get("method"))
        if method not in SETTINGS or trial.status != "finished":
            continue
        values = seen.setdefault(method, {})
        for key in SETTINGS[method][0]:
            value = trial.config.get(key)
            if key == "baselines.safedice_alpha" and value is None:
                value = round(trial.metric("train/alpha"), 4)  # computed from the data
            values.setdefault(key.split(".", 1)[1], set()).add(value)
    shared = sorted({", ".join(f"{k.split('.', 1)[1]} {trial.config[k]}" for k in SHARED
                               if k in trial.config)
                     for trial in results.trials if trial.status == "finished"})
    rows = [[method, "; ".join(f"{k} {'/'.join(str(v) for v in sorted(vs, key=str))}"
                               for k, vs in seen[method].items()) or "-", SETTINGS[method][1]]
            for method in SETTINGS if method in seen]
    return Table("Method settings", ["method", "constants as run", "chosen how"], rows,
                 note="every method shares the training settings (" + ("; ".join(shared)
                      or "train.*") + "); none is tuned on the seeds it is compared on")


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    """Score table (mean +- std over seeds), learning curves, the claim, the data mixes."""
    scores: dict[str, dict[str, list[float]]] = {}
    curves: dict[str, dict[str, list]] = {}
    mixes: dict[str, dict[str, float]] = {}
    diverged: dict[tuple[str, str], int] = {}
    by_seed: dict[str, dict[str, dict[int, float]]] = {}
    data_sources: set[tuple[str, str]] = set()
    for trial in results.trials:
        if trial.status not in ("finished", "diverged"):
            continue
        mix, method = str(trial.config["data.mix"]), str(trial.config["method"])
        if method == SAC:
            continue  # experts, not imitation: in the trials table only
        data_sources.add((str(trial.config.get("data.source", "generate")),
                          str(trial.config.get("data.task", "pendulum"))))
        if trial.status == "diverged":
            diverged[mix, method] = diverged.get((mix, method), 0) + 1
            continue
        scores.setdefault(mix, {}).setdefault(method, []).append(trial.metric("eval/score"))
        by_seed.setdefault(mix, {}).setdefault(method, {})[int(trial.config["train.seed"])] = \
            trial.metric("eval/score")
        curves.setdefault(mix, {}).setdefault(method, []).append(
            [(row["train/step"], row["eval/score"]) for row in trial.history
             if "eval/score" in row and math.isfinite(row["eval/score"])])
        mixes[mix] = {k[5:]: v for k, v in trial.last.items() if k.startswith("data/")}
    if not scores:
        return Analysis(notes=["no finished trials yet: nothing to tabulate"])
    notes = [data_note(source, task) for source, task in sorted(data_sources)]
    rows, summary = [], {"scores": {}, "claim": {}, "mixes": mixes, "data_notes": list(notes)}
    for mix in sorted(scores):
        ranked = sorted(scores[mix], key=lambda m: -comparison.mean_std(scores[mix][m])[0])
        for method in ranked:
            mean, std = comparison.mean_std(scores[mix][method])
            rows.append([mix, method, f"{mean:.1f} +- {std:.1f}", len(scores[mix][method]),
                         diverged.get((mix, method), 0)])
            summary["scores"].setdefault(mix, {})[method] = {
                "mean": mean, "std": std, "values": scores[mix][method]}
        verdict = summary["claim"][mix] = comparison.claim(scores[mix])
        if verdict:
            best = verdict["best_baseline"]
            notes.append(
                f"mix {mix}: DualCOIL {verdict['dualcoil']:.1f} vs BC-on-all "
                f"{verdict['bc_all']:.1f}; best other method {best} "
                f"{verdict['best_baseline_score']:.1f} (seed means; the paired tests are in "
                "the Claim section)")
    table = Table("Normalised score", ["mix", "method", "score (mean +- std)", "seeds",
                                       "diverged"], rows,
                  note="final evaluation of each trial; 100 (R - R_random) / (R_expert - "
                       "R_random); std over seeds (ddof 0); ranked within each mix; "
                       "bc_oracle uses hidden labels (a reference, not a method)")
    data_rows = [[mix, m.get("good_episodes"), m.get("bad_transitions"),
                  m.get("unlabeled_episodes"), m.get("unlabeled_transitions"),
                  m.get("unlabeled_expert_fraction"), m.get("ref_random"), m.get("ref_expert")]
                 for mix, m in sorted(mixes.items())]
    data_table = Table("Data mixes", ["mix", "good episodes", "bad transitions",
                                      "unlabeled pieces", "unlabeled transitions",
                                      "expert share of unlabeled", "R_random", "R_expert"],
                       data_rows, note="good: whole expert episodes; bad: data.bad_unit (by "
                                       "default slices of 1000 consecutive transitions, as "
                                       "the authors' code); unlabeled pieces: expert "
                                       "episodes + undesirable episodes or pieces of them; "
                                       "R_random/R_expert: reference returns")
    diagnostics = dualcoil_diagnostics(results)
    figures = [
        ("learning curves", comparison.plot_learning_curves(curves, figures_dir / "curves.png")),
        ("final scores", comparison.plot_final_scores(scores, figures_dir / "scores.png")),
    ]
    summary["dualcoil_diagnostics"] = {row[0]: dict(zip(DIAGNOSTICS, row[1:], strict=True))
                                       for row in diagnostics.rows}
    return Analysis(tables=[table, data_table, settings_table(results), diagnostics],
                    figures=figures, summary=summary,
                    notes=notes,
                    claims=dualcoil_claims(by_seed, run_scope(results)) + regimes_not_run(results))


DIAGNOSTICS = ("train/w_unlabeled_expert", "train/w_unlabeled_other",
               "train/q_unlabeled_expert", "train/q_unlabeled_other",
               "train/actor_expert_share", "data/unlabeled_expert_fraction")


def dualcoil_diagnostics(results: RunResults) -> Table:
    """What DualCOIL's weights do with the unlabeled set's hidden expert/other parts."""
    values: dict[str, list[list[float]]] = {}
    for trial in results.trials:
        if trial.status == "finished" and trial.config["method"] == "dualcoil":
            values.setdefault(str(trial.config["data.mix"]), []).append(
                [trial.metric(k) for k in DIAGNOSTICS])
    rows = [[mix, *np.nanmean(np.array(v, dtype=float), axis=0).tolist()]
            for mix, v in sorted(values.items())]
    return Table("DualCOIL's weights on the unlabeled data (hidden labels)",
                 ["mix", "reward weight w: expert", "w: other", "Q: expert", "Q: other",
                  "actor BC weight on expert", "expert share of unlabeled"], rows,
                 note="means over seeds of the last interval; the actor learns from the "
                      "unlabeled set with these shares of its BC weight")
