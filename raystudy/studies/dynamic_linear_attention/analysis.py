"""The dynamic_linear_attention report: claims D1-D4 (gated, scoped, Holm within each
family), the paper's regimes not run, tables of recall and of the mechanism, two figures."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from raystudy import (
    Analysis,
    Claim,
    RunResults,
    Table,
    TrialRecord,
    by_seed,
    claims,
    mean_metric,
    paired,
    save_figure,
)
from raystudy.algorithms import stats

SCORES = ("state_drift", "token_vs_state")
"""DLA's two readings of the information score (``linear_attention.SCORES``)."""
BASELINES = ("loglinear", "fixed_chunk")
"""D1's baselines at the equal budget; D2 reads loglinear."""
BOUNDED = ("fixed_chunk", "fifo", "loglinear", "dla", "dla_tau0")
"""Mixers with a state budget (states/max is gated for those a claim reads)."""
ABOVE_CHANCE = 0.10
"""A mixer learned when its mean test accuracy is at least 10 points above chance, 1/P
(copying a random value of the context; fixed before any run)."""
CEILING = 0.95
"""A baseline leaves room to be exceeded when its mean test accuracy is at most this: two
mixers both at 0.99-1.0 compare nothing (fixed before any run, after the quick profile
put every learnt mixer at 0.99-1.0)."""
SELECTION_SEEDS = 100
"""Recall seeds from here on choose tau and the score (spaces/tau.yaml); claims read below."""
LOW_LOAD = 0.5
"""D4 reads the needle loads (needles / K) at or below this."""


def levels(T: int) -> int:
    """Log-Linear's level count ceil(log2 T) + 1 (``linear_attention.loglinear_levels``)."""
    return (T - 1).bit_length() + 1


def arm(trial: TrialRecord) -> str:
    """The mixer, DLA's tau and score, and a budget other than ``levels``, e.g.
    ``dla (tau 0.1, state_drift)``, ``fifo [2x_levels]``."""
    mixer = str(trial.setting("model.mixer", "dla"))
    score = trial.setting("dla.score", "state_drift")
    name = {"dla": f"dla (tau {float(trial.setting('dla.tau', 0.1)):g}, {score})",
            "dla_tau0": f"dla_tau0 ({score})"}.get(mixer, mixer)
    budget = str(trial.setting("dla.capacity", "levels"))
    if budget != "levels" and mixer in ("fixed_chunk", "fifo", "dla", "dla_tau0"):
        name += f" [{budget}]"
    return name


def _T(trial: TrialRecord) -> int:
    return int(trial.setting("data.seq_len", 64))


def _seed(trial: TrialRecord) -> int:
    return int(trial.setting("train.seed", 0))





# ----------------------------------------------------------------------------- preconditions
def learned(name: str, trials: list[TrialRecord], T: int) -> claims.Precondition:
    """The mixer's mean test accuracy at T is ABOVE_CHANCE over chance 1/P."""
    pairs = {int(t.setting("data.num_kv_pairs", 4)) for t in trials} or {4}
    chance = 1 / min(pairs)
    acc = mean_metric(trials, "eval/acc")
    return claims.Precondition(
        f"{name} learned at T = {T}: test accuracy >= chance (1/P = {chance:.3f}) + "
        f"{ABOVE_CHANCE:.2f}", bool(trials) and acc >= chance + ABOVE_CHANCE,
        f"mean accuracy {acc:.3f} over {len(trials)} trials" if trials else "no trial")


def leaves_room(name: str, trials: list[TrialRecord], T: int) -> claims.Precondition:
    """The baseline's mean test accuracy at T is at most CEILING: DLA can exceed it."""
    acc = mean_metric(trials, "eval/acc")
    return claims.Precondition(
        f"{name} leaves room at T = {T}: its test accuracy <= {CEILING:.2f}, below the "
        "ceiling where no mixer can exceed another", bool(trials) and acc <= CEILING,
        f"mean accuracy {acc:.3f} over {len(trials)} trials" if trials else "no trial")


def budget_held(arms: dict[str, list[TrialRecord]], T: int) -> claims.Precondition:
    """Every bounded mixer a claim reads at T read at most loglinear_levels(T) states."""
    most = {name: max((t.metric("states/max") for t in trials), default=math.nan)
            for name, trials in arms.items()}
    return claims.Precondition(
        f"the equal budget held at T = {T}: every bounded mixer read <= loglinear_levels(T) = "
        f"{levels(T)} states per query", bool(most) and all(
            math.isfinite(v) and v <= levels(T) for v in most.values()),
        ", ".join(f"{name} {v:g}" for name, v in most.items()))


# ----------------------------------------------------------------------------- recall claims
def tau_selection(trials: list[TrialRecord]) -> tuple[tuple[float, str] | None, str]:
    """(tau, score) with the best mean accuracy of DLA on the selection seeds of this run
    (None without any), and a note saying where the claims' tau came from."""
    scores: dict[tuple[float, str], list[float]] = defaultdict(list)
    for t in trials:
        if t.setting("model.mixer") == "dla" and _seed(t) >= SELECTION_SEEDS:
            scores[(float(t.setting("dla.tau", 0.1)), str(t.setting("dla.score",
                                                                    "state_drift")))].append(
                t.metric("eval/acc"))
    if scores:
        best = max(scores, key=lambda k: float(np.nanmean(scores[k])))
        return best, (f"tau {best[0]:g} and score {best[1]} chosen in this run on seeds >= "
                      f"{SELECTION_SEEDS} (mean accuracy {np.nanmean(scores[best]):.3f}; "
                      f"{len(scores)} candidates)")
    recorded = {str(t.setting("dla.tau_selection", "")) for t in trials} - {""}
    return None, ("; ".join(sorted(recorded)) if recorded else
                  f"tau set by the profile, not selected on seeds >= {SELECTION_SEEDS} in "
                  "this run (spaces/tau.yaml)")


def dla_arm(claim_trials: list[TrialRecord], chosen: tuple[float, str] | None) -> str | None:
    """The DLA arm the claims read: the chosen (tau, score), else the most common one."""
    dla = [t for t in claim_trials if t.setting("model.mixer") == "dla"
           and str(t.setting("dla.capacity", "levels")) == "levels"]
    if chosen is not None:
        dla = [t for t in dla if (float(t.setting("dla.tau", 0.1)),
                                  str(t.setting("dla.score", "state_drift"))) == chosen]
    counts = Counter(arm(t) for t in dla)
    return counts.most_common(1)[0][0] if counts else None


def d1(arms: dict[tuple[str, int], list[TrialRecord]], dla: str | None, scope: str,
       note: str) -> list[Claim]:
    """D1: at the longest T, DLA's accuracy exceeds each baseline's (Holm over baselines)."""
    lengths = sorted(T for name, T in arms if name == dla)
    present = [b for b in BASELINES if lengths and (b, lengths[-1]) in arms]
    if dla is None or not present:
        return [claims.missing_claim(
            "D1: at the equal budget DLA's accuracy exceeds Log-Linear's and fixed chunks'",
            "paired sign-flip", "accuracy: dla - baseline", "the run has no dla or no "
            "baseline (loglinear, fixed_chunk) trials at a common T", scope=scope)]
    T = lengths[-1]
    read = {name: arms[(name, T)] for name in (dla, *present)}
    gates = (*(learned(name, trials, T) for name, trials in read.items()), budget_held(read, T))
    tests = [claims.Test(
        f"D1: at the equal budget K = {levels(T)}, DLA's accuracy exceeds {base}'s at the "
        f"longest T = {T}", f"test accuracy: dla - {base}", stats.paired_comparison(
            *paired(by_seed(read[dla], "eval/acc"), by_seed(read[base], "eval/acc"))),
        "greater", note=note, preconditions=(*gates, leaves_room(base, read[base], T)))
        for base in present]
    return claims.holm_family(tests, f"{len(tests)} baselines", scope=scope)


def d2(arms: dict[tuple[str, int], list[TrialRecord]], dla: str | None, scope: str,
       note: str) -> Claim:
    """D2: each seed's OLS slope of acc(dla) - acc(loglinear) on log2 T is above 0."""
    lengths = sorted(T for name, T in arms if name == dla and ("loglinear", T) in arms)
    statement = "D2: DLA's advantage over Log-Linear grows with log2 T"
    effect = "slope of accuracy (dla - loglinear) per doubling of T"
    if dla is None or len(lengths) < 2:
        return claims.missing_claim(statement, "paired sign-flip on per-seed slopes", effect,
                                    f"needs dla and loglinear at >= 2 lengths T; this run has "
                                    f"{lengths or 'none'}", scope=scope)
    acc = {T: (by_seed(arms[(dla, T)], "eval/acc"), by_seed(arms[("loglinear", T)],
                                                               "eval/acc")) for T in lengths}
    seeds = sorted(set.intersection(*(set(a) & set(b) for a, b in acc.values())))
    x = np.log2(lengths)
    slopes = [float(np.polyfit(x, [acc[T][0][s] - acc[T][1][s] for T in lengths], 1)[0])
              for s in seeds]
    gates = [g for T in lengths for g in (
        learned(dla, arms[(dla, T)], T), learned("loglinear", arms[("loglinear", T)], T),
        budget_held({dla: arms[(dla, T)], "loglinear": arms[("loglinear", T)]}, T))]
    gates.append(leaves_room("loglinear", arms[("loglinear", lengths[-1])], lengths[-1]))
    return claims.paired_claim(statement, effect, stats.paired_comparison(
        slopes, [0.0] * len(slopes)), "greater", scope=scope, preconditions=gates,
        note=f"T = {', '.join(map(str, lengths))}; {note}")


# ----------------------------------------------------------------------------- mechanism
def mechanism_trial(trials: list[TrialRecord]) -> tuple[TrialRecord | None, str]:
    """The mechanism trial D3 and D4 read (at the equal budget when there is one)."""
    done = [t for t in trials if math.isfinite(t.metric("mech/capacity"))]
    levels_first = sorted(done, key=lambda t: str(t.setting("dla.capacity", "levels")) != "levels")
    if not levels_first:
        return None, ""
    return levels_first[0], (f"{len(done)} mechanism trial(s); D3 and D4 read "
                             f"{levels_first[0].trial_id} (their claim streams do not depend on "
                             "model.mixer or train.seed)")


def _stream_values(t: TrialRecord, prefix: str) -> list[float]:
    return [t.metric(f"{prefix}@{i}") for i in range(int(t.metric("mech/streams", 0)))]


def counts_match(t: TrialRecord, family: str, score: str) -> claims.Precondition:
    """D3/D4's gate: DLA and the fixed blocks have the same block count on every stream."""
    dla = _stream_values(t, f"mech/{family}/dla/{score}/blocks")
    fixed = _stream_values(t, f"mech/{family}/fixed/{score}/blocks")
    same = sum(a == b for a, b in zip(dla, fixed, strict=True))
    return claims.Precondition(
        f"the block counts match ({family}, {score}): fixed blocks as many as DLA's on every "
        "stream", bool(dla) and same == len(dla),
        f"{same} of {len(dla)} streams; DLA's blocks {min(dla, default=0):g}-"
        f"{max(dla, default=0):g}")


def mechanism_scope(t: TrialRecord, family: str) -> str:
    m = "mechanism."
    what = (f"{t.setting(m + 'segments', 6)} segments, noise {t.setting(m + 'noise', 0.05)}"
            if family == "piecewise" else f"theme noise {t.setting(m + 'theme_noise', 0.1)}")
    return (f"generated {family} streams (T = {t.setting(m + 'length', 256)}, {what}, dk = "
            f"{t.setting(m + 'dk', 16)}, dv = {t.setting(m + 'dv', 16)}), K = "
            f"{t.metric('mech/capacity'):g}, {t.metric('mech/streams'):g} streams; training-free; "
            "CPU")


def d3(t: TrialRecord | None) -> list[Claim]:
    """D3: B(pi_DLA) < B(pi_fixed) at matched block count, per score (Holm over scores)."""
    if t is None:
        return [claims.missing_claim("D3: DLA's partition has a smaller Theorem 3.1 bound than "
                                     "fixed blocks", "paired sign-flip", "bound: dla - fixed",
                                     "the run has no mechanism trial (task=mechanism)",
                                     scope="generated piecewise streams; CPU")]
    tests = [claims.Test(
        f"D3: at matched block count, DLA's partition ({s}) has a smaller Theorem 3.1 bound "
        "than fixed blocks on piecewise streams", "bound B(pi) per unit ||q||: dla - fixed",
        stats.paired_comparison(_stream_values(t, f"mech/piecewise/dla/{s}/bound"),
                                _stream_values(t, f"mech/piecewise/fixed/{s}/bound"),
                                unit="streams"), "less",
        note=f"tau {t.metric(f'mech/piecewise/tau/{s}'):g} chosen on selection streams "
             "100-102 (DLA's least mean bound)", preconditions=(counts_match(t, "piecewise", s),))
        for s in SCORES]
    return claims.holm_family(tests, f"{len(tests)} scores",
                              scope=mechanism_scope(t, "piecewise"))


def needle_loads(t: TrialRecord) -> list[tuple[str, float]]:
    """(family, actual load) of the trial's needle families, by load."""
    found = [(k.split("/")[1], t.metric(k)) for k in t.last
             if k.startswith("mech/needles_") and k.endswith("/load")]
    return sorted(found, key=lambda x: x[1])


def flip_load(t: TrialRecord, score: str) -> str:
    """The smallest load where DLA's mean recall no longer beats the matched fixed blocks'."""
    for family, load in needle_loads(t):
        if t.metric(f"mech/{family}/dla/{score}/recall") <= t.metric(
                f"mech/{family}/fixed/{score}/recall"):
            return f"{score}: DLA stops beating fixed blocks at load {load:.2f}"
    return f"{score}: no flip up to load {max((x for _, x in needle_loads(t)), default=0):.2f}"


def d4(t: TrialRecord | None) -> list[Claim]:
    """D4: DLA's best-state recall beats matched fixed blocks' at load <= LOW_LOAD (Holm over
    loads and scores); the flip load in the note."""
    low = [(f, load) for f, load in needle_loads(t) if load <= LOW_LOAD] if t else []
    if t is None or not low:
        return [claims.missing_claim(
            f"D4: DLA's best-state recall beats fixed blocks' at load <= {LOW_LOAD}",
            "paired sign-flip", "recall: dla - fixed", "the run has no mechanism trial with a "
            f"needle load <= {LOW_LOAD}", scope="generated needle streams; CPU")]
    tests = [claims.Test(
        f"D4: DLA's ({s}) best-state recall beats fixed blocks' at matched block count, load "
        f"{load:.2f}", "needle recall (cosine of the best state's answer): dla - fixed",
        stats.paired_comparison(_stream_values(t, f"mech/{family}/dla/{s}/recall"),
                                _stream_values(t, f"mech/{family}/fixed/{s}/recall"),
                                unit="streams"), "greater",
        note=f"tau {t.metric(f'mech/needles/tau/{s}'):g} chosen on selection streams 100-102; "
             + flip_load(t, s), preconditions=(counts_match(t, family, s),))
        for family, load in low for s in SCORES]
    return claims.holm_family(tests, f"{len(tests)} loads x scores",
                              scope=mechanism_scope(t, "needles"))


def not_run_rows() -> list[Claim]:
    return [
        claims.not_run("DLA on Mamba-2-780M and Gated DeltaNet-1.3B beats their Log-Linear "
                       "variants after pre-training", "780M / 1.3B models, 50B tokens of "
                       "Long-Data-Collections at 16K context", "raystudy trains small MixerLMs "
                       "on generated recall; the paper profile reaches T = 4096 on one GPU"),
        claims.not_run("DLA wins on the 10 (ICML) / 16 (arXiv) downstream datasets",
                       "common-sense, context-retrieval, RULER and LongBench evaluations",
                       "no pre-trained model and no downloaded benchmark"),
        claims.not_run("DLA improves throughput and memory", "fused GPU kernels",
                       "raystudy's partition is a Python scan and its attention is "
                       "materialised: time/step_ms says nothing about kernels"),
        claims.not_run("The Gated DeltaNet multi-state form", "delta-rule states merged by DLA",
                       "how DLA merges delta-rule states is not defined publicly"),
    ]


# ----------------------------------------------------------------------------- report
RECALL_COLUMNS = ("eval/acc", "eval/acc_far", "eval/acc_near", "states/mean", "states/max",
                  "boundary/kv_rate", "boundary/filler_rate", "time/step_ms")


def recall_table(arms: dict[tuple[str, int], list[TrialRecord]]) -> Table:
    rows = [[name, T, len(trials)] + [mean_metric(trials, m) for m in RECALL_COLUMNS]
            for (name, T), trials in sorted(arms.items(), key=lambda x: (x[0][1], x[0][0]))]
    return Table("Recall per arm and T (means over seeds; softmax and linear are references, "
                 "dla_tau0 / fifo / other budgets and scores are beside the claims)",
                 ["arm", "T", "trials", "acc", "acc far", "acc near", "states mean",
                  "states max", "kv open rate", "filler open rate", "step ms"], rows)


def mechanism_tables(t: TrialRecord) -> list[Table]:
    policies = sorted({k.split("/", 2)[2].rsplit("/", 1)[0] for k in t.last
                       if k.startswith("mech/piecewise/") and k.endswith("/bound")})
    piecewise = Table(
        "Piecewise streams: Theorem 3.1's bound, a realised deviation and boundary F1 per "
        "policy (means over claim streams; fixed/<score> is matched to that DLA's count)",
        ["policy", "blocks", "bound B", "realised", "boundary F1"],
        [[p] + [t.metric(f"mech/piecewise/{p}/{q}") for q in ("blocks", "bound", "realised",
                                                               "f1")] for p in policies],
        note=f"realised > bound in {t.metric('mech/bound_violations'):g} streams (Theorem 3.1)")
    rows = []
    for family, load in needle_loads(t):
        names = sorted({k.split("/", 2)[2].rsplit("/", 1)[0] for k in t.last
                        if k.startswith(f"mech/{family}/") and k.endswith("/recall")})
        rows += [[p, round(load, 3), t.metric(f"mech/{family}/{p}/recall"),
                  t.metric(f"mech/{family}/{p}/blocks")] for p in names]
    needles = Table("Needle streams: best-state recall per policy and load (needles / K)",
                    ["policy", "load", "recall", "blocks"], rows)
    taus = Table("DLA's tau chosen on selection streams 100-102, per family and score",
                 ["family", "score", "tau"],
                 [[f, s, t.metric(f"mech/{f}/tau/{s}")] for f in ("piecewise", "needles")
                  for s in SCORES])
    return [piecewise, needles, taus]


def figures(arms: dict[tuple[str, int], list[TrialRecord]], mech: TrialRecord | None,
            figures_dir: Path) -> list[tuple[str, Path]]:
    from matplotlib.figure import Figure

    out = []
    if arms:
        fig = Figure(figsize=(9, 3.6))
        left, right = fig.subplots(1, 2)
        for name in sorted({n for n, _ in arms}):
            lengths = sorted(T for n, T in arms if n == name)
            for axis, metric in ((left, "eval/acc"), (right, "eval/acc_far")):
                axis.plot(lengths, [mean_metric(arms[(name, T)], metric) for T in lengths], "o-",
                          label=name)
        left.set(xscale="log", xlabel="T", ylabel="test accuracy")
        right.set(xscale="log", xlabel="T", ylabel="accuracy, keys >= T/2 back")
        left.legend(fontsize=6)
        out.append(("Recall accuracy vs T per arm", save_figure(fig, figures_dir / "recall.png")))
    if mech is not None and needle_loads(mech):
        fig = Figure(figsize=(5, 3.6))
        axis = fig.subplots()
        loads = needle_loads(mech)
        for p in sorted({k.split("/", 2)[2].rsplit("/", 1)[0] for k in mech.last
                         if k.startswith(f"mech/{loads[0][0]}/") and k.endswith("/recall")}):
            axis.plot([x for _, x in loads], [mech.metric(f"mech/{f}/{p}/recall")
                                              for f, _ in loads], "o-", label=p)
        axis.axvline(LOW_LOAD, color="k", ls=":")
        axis.set(xlabel="load (needles / K)", ylabel="best-state recall (cosine)")
        axis.legend(fontsize=6)
        out.append(("Needle recall vs load per policy", save_figure(fig, figures_dir /
                                                                    "needles.png")))
    return out


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    trials = [t for t in results.trials if t.history]
    if not trials:
        return Analysis(notes=["No trial reported: nothing to analyse."])
    recall = [t for t in trials if t.setting("task", "recall") == "recall"
              and math.isfinite(t.metric("eval/acc"))]
    claim_trials = [t for t in recall if _seed(t) < SELECTION_SEEDS]
    arms: dict[tuple[str, int], list[TrialRecord]] = defaultdict(list)
    for t in claim_trials:
        arms[(arm(t), _T(t))].append(t)
    chosen, note = tau_selection(recall)
    dla = dla_arm(claim_trials, chosen)
    first = claim_trials[0] if claim_trials else (recall[0] if recall else trials[0])
    lengths = sorted({_T(t) for t in claim_trials}) or [_T(first)]
    scope = (f"generated {first.setting('data.kind', 'mqar_sparse')} (V = "
             f"{first.setting('data.vocab_size', 24)}, P = {first.setting('data.num_kv_pairs', 4)}"
             f"), T = {', '.join(map(str, lengths))}; {first.setting('model.n_layers', 2)}-layer "
             f"d={first.setting('model.d_model', 64)} MixerLM, {first.setting('train.steps', 0)} "
             f"steps; {'CUDA' if first.metric('hw/cuda', 0.0) else 'CPU'}, "
             f"{first.setting('train.threads', 1)} thread(s)")
    mech, mech_note = mechanism_trial(trials)
    rows = d1(arms, dla, scope, note) + [d2(arms, dla, scope, note)] + d3(mech) + d4(mech)
    tables = ([recall_table(arms)] if arms else []) + (mechanism_tables(mech) if mech else [])
    notes = [f"Recall claims read {dla}; {note}." if dla else f"Recall: {note}."]
    if mech_note:
        notes.append(mech_note + ".")
    return Analysis(tables=tables, figures=figures(arms, mech, figures_dir),
                    claims=rows + not_run_rows(), notes=notes,
                    summary={"dla_arm": dla, "lengths": lengths,
                             "arms": {f"{n} @ T={T}": len(v) for (n, T), v in arms.items()}})
