"""The contrastive_imitation study's report: the claim (DualCOIL minus each baseline's
score, paired over seeds, Holm over every mix x baseline), the normalised score per method
and mix (mean +- std over seeds), the learning curves, the seed means of DualCOIL,
BC-on-all and the best baseline, the data mixes, and what DualCOIL's weights do with the
unlabeled set's hidden expert and other parts.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from raystudy import Analysis, Claim, RunResults, Table
from raystudy.algorithms import stats
from raystudy.algorithms.imitation import comparison
from raystudy.studies import claims
from raystudy.studies.contrastive_imitation.data import SAC

CLAIM = ("DualCOIL, learning from a few good and bad demonstrations plus unlabeled data, "
         "scores above every baseline")


def dualcoil_claims(by_seed: dict[str, dict[str, dict[int, float]]]) -> list[Claim]:
    """Per mix and baseline (not a hidden-label reference): DualCOIL's final score minus the
    baseline's on the same seed, paired over seeds, Holm over every mix x baseline."""
    tests = {}
    for mix, methods in sorted(by_seed.items()):
        ours = methods.get("dualcoil", {})
        for method in comparison._ordered(methods):
            if method in ("dualcoil", *comparison.REFERENCES) or not ours:
                continue
            seeds = sorted(set(ours) & set(methods[method]))
            tests[mix, method] = stats.paired_comparison([ours[s] for s in seeds],
                                                         [methods[method][s] for s in seeds])
    if not tests:
        return [claims.missing_claim(CLAIM, "paired over seeds", "score: DualCOIL - baseline",
                                     "no mix ran DualCOIL and a baseline")]
    adjusted = stats.holm([t.p_value for t in tests.values()])
    return [claims.paired_claim(
        f"{CLAIM} (mix {mix}, vs {method})", f"normalised score: DualCOIL - {method}", result,
        "greater", p_value=p, family=f"{len(tests)} mix x baseline tests")
        for ((mix, method), result), p in zip(tests.items(), adjusted, strict=True)]


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    """Score table (mean +- std over seeds), learning curves, the claim, the data mixes."""
    scores: dict[str, dict[str, list[float]]] = {}
    curves: dict[str, dict[str, list]] = {}
    mixes: dict[str, dict[str, float]] = {}
    diverged: dict[tuple[str, str], int] = {}
    by_seed: dict[str, dict[str, dict[int, float]]] = {}
    for trial in results.trials:
        if trial.status not in ("finished", "diverged"):
            continue
        mix, method = str(trial.config["data.mix"]), str(trial.config["method"])
        if method == SAC:
            continue  # experts, not imitation: in the trials table only
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
    rows, summary, notes = [], {"scores": {}, "claim": {}, "mixes": mixes}, []
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
    data_rows = [[mix, m.get("good_episodes"), m.get("bad_episodes"),
                  m.get("unlabeled_episodes"), m.get("unlabeled_transitions"),
                  m.get("unlabeled_expert_fraction"), m.get("ref_random"), m.get("ref_expert")]
                 for mix, m in sorted(mixes.items())]
    data_table = Table("Data mixes", ["mix", "good episodes", "bad episodes",
                                      "unlabeled episodes", "unlabeled transitions",
                                      "expert share of unlabeled", "R_random", "R_expert"],
                       data_rows, note="whole episodes; R_random/R_expert: reference returns")
    diagnostics = dualcoil_diagnostics(results)
    figures = [
        ("learning curves", comparison.plot_learning_curves(curves, figures_dir / "curves.png")),
        ("final scores", comparison.plot_final_scores(scores, figures_dir / "scores.png")),
    ]
    summary["dualcoil_diagnostics"] = {row[0]: dict(zip(DIAGNOSTICS, row[1:], strict=True))
                                       for row in diagnostics.rows}
    return Analysis(tables=[table, data_table, diagnostics], figures=figures, summary=summary,
                    notes=notes, claims=dualcoil_claims(by_seed))


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
