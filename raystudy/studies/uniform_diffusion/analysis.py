"""The uniform_diffusion report: claims U1-U4 (with their preconditions, scope and the
paper's regimes not run), the metrics per arm and step count, and two figures."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
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
    paired,
    save_figure,
)
from raystudy.algorithms import stats

CLAIM_STEPS = 32
"""The sampler's step count S the claims read (the largest run when 32 was not)."""
MARGIN = 0.05
"""U1's non-inferiority margin in Gen NLL (nats/token): about 2-3 % of the entropy at
V = 32, fixed before any run."""
LEARNED_SHARE = 0.5
"""The NELBO baseline learned the data when its validation bound closes at least this
share of the gap from the uniform guess (log V) to the data's entropy."""
COLLAPSE = 0.95
"""An arm collapsed when a trial's sample entropy falls below this share of the true
samples' entropy."""
SELECTION_SEEDS = 100
"""Seeds from here on select the regulariser's form and weight (spaces/reg.yaml); U2
reads the seeds below it."""
PAPER_SCALE = "Duo's DiT-small (12 x 768) and larger, on LM1B (L = 128) and OWT (L = 1024)"



def arm(trial: TrialRecord) -> str:
    """``nelbo``, or ``simple/<mask>``, ``simple_reg/<mask>``."""
    name = trial.setting("loss.name", "simple")
    return name if name == "nelbo" else f"{name}/{trial.setting('loss.mask', 'changed')}"


def sampler_steps(trials: list[TrialRecord]) -> list[int]:
    """The step counts S the trials drew samples at (every run reports their entropy)."""
    return sorted({int(k.split("@")[1]) for t in trials for k in t.last
                   if k.startswith("eval/entropy@")})


def claim_metric(trials: list[TrialRecord], steps: int
                 ) -> tuple[str, str, claims.Precondition]:
    """The claims' sample-quality metric: Gen NLL under the exact likelihood (the Markov
    stand-in), else under the project-trained AR evaluator (text, ``eval.ar_evaluator``),
    with the precondition that makes it meaningful."""
    exact = any(math.isfinite(t.metric("data/true_gen_nll")) for t in trials)
    if not exact and any(math.isfinite(t.metric(f"eval/gen_nll_ar@{steps}")) for t in trials):
        return f"eval/gen_nll_ar@{steps}", "Gen NLL under the AR evaluator", evaluator_learned(
            trials)
    return f"eval/gen_nll@{steps}", "Gen NLL", metric_is_exact(trials)


def _claim_steps(trials: list[TrialRecord]) -> int:
    steps = sampler_steps(trials)
    return CLAIM_STEPS if CLAIM_STEPS in steps or not steps else steps[-1]




# ----------------------------------------------------------------------------- preconditions
def metric_is_exact(trials: list[TrialRecord]) -> claims.Precondition:
    """The oracle metric is right: true samples' Gen NLL within 3 SE of the entropy."""
    t = next((t for t in trials if math.isfinite(t.metric("data/true_gen_nll"))), None)
    if t is None:
        return claims.Precondition("the oracle Gen NLL is exact (true samples score the "
                                   "entropy)", False, "no trial has an exact likelihood")
    gap, se = t.metric("data/true_gen_nll") - t.metric("data/entropy"), t.metric(
        "data/true_gen_nll_se")
    return claims.Precondition(
        "the oracle Gen NLL is exact: true samples score the data's entropy within 3 SE",
        abs(gap) <= 3 * se, f"true samples {t.metric('data/true_gen_nll'):.4f} vs entropy "
        f"{t.metric('data/entropy'):.4f} nats/token, SE {se:.4f}")


def evaluator_learned(trials: list[TrialRecord]) -> claims.Precondition:
    """The AR evaluator learned context: it scores real validation text below a unigram
    model fit on the training rows (else its Gen PPL only counts token frequencies)."""
    t = next((t for t in trials if math.isfinite(t.metric("data/val_nll_ar"))), None)
    if t is None:
        return claims.Precondition("the AR evaluator learned the text", False,
                                   "no trial scored the validation rows")
    ar, unigram = t.metric("data/val_nll_ar"), t.metric("data/val_unigram_nll")
    return claims.Precondition(
        "the AR evaluator learned the text: real validation rows score below a unigram "
        "model's NLL", ar < unigram, f"AR evaluator {ar:.3f} vs unigram {unigram:.3f} "
        f"nats/token (validation PPL {math.exp(ar):.2f})")


def entropy_reference(trial: TrialRecord) -> tuple[float, str]:
    """The data's entropy (Markov) or, for text, the AR evaluator's validation NLL (a
    cross-entropy: an upper bound on the text's entropy rate, raystudy's stand-in)."""
    if math.isfinite(trial.metric("data/entropy")):
        return trial.metric("data/entropy"), "the entropy"
    return trial.metric("data/val_nll_ar"), "the AR evaluator's validation NLL"


def baseline_learned(nelbo: list[TrialRecord], vocab_size: int) -> claims.Precondition:
    """The NELBO baseline learned the data (its bound closed LEARNED_SHARE of the gap)."""
    if not nelbo:
        return claims.Precondition("the NELBO baseline learned the data", False,
                                   "no nelbo trial finished")
    bound = float(np.mean([t.metric("eval/nelbo") for t in nelbo]))
    entropy, named = entropy_reference(nelbo[0])
    ceiling = entropy + LEARNED_SHARE * (math.log(vocab_size) - entropy)
    return claims.Precondition(
        f"the NELBO baseline learned the data: its validation bound closes >= "
        f"{LEARNED_SHARE:.0%} of the gap from log V to {named}", bound <= ceiling,
        f"val NELBO {bound:.3f} vs {named} {entropy:.3f}, log V {math.log(vocab_size):.3f} "
        f"(needs <= {ceiling:.3f}) nats/token")


def no_collapse(name: str, trials: list[TrialRecord], steps: int) -> claims.Precondition:
    """No trial of the arm collapsed: sample entropy >= COLLAPSE x the true samples'."""
    shares = [t.metric(f"eval/entropy@{steps}") / t.metric("data/true_sample_entropy")
              for t in trials]
    shares = [s for s in shares if math.isfinite(s)]
    lowest = min(shares) if shares else math.nan
    return claims.Precondition(
        f"{name} did not collapse: every trial's sample entropy >= {COLLAPSE:g} x the true "
        f"samples'", bool(shares) and lowest >= COLLAPSE,
        f"lowest share {lowest:.3f} over {len(shares)} trials" if shares else "no trial")


def is_selection(trial: TrialRecord) -> bool:
    """A regulariser-selection trial (spaces/reg.yaml): simple_reg on a seed >= 100."""
    return (trial.setting("loss.name", "simple") == "simple_reg"
            and int(trial.setting("train.seed", 0)) >= SELECTION_SEEDS)


def regulariser(trial: TrialRecord) -> tuple[str, float]:
    return str(trial.setting("loss.reg", "mean_logp")), float(trial.setting("loss.reg_weight",
                                                                            0.01))


def selection_scores(selection: list[TrialRecord], metric: str
                     ) -> dict[tuple[str, float], list[float]]:
    """Each (form, weight)'s ``metric`` over the selection seeds."""
    scores: dict[tuple[str, float], list[float]] = defaultdict(list)
    for t in selection:
        scores[regulariser(t)].append(t.metric(metric))
    return scores


def regulariser_selection(selection: list[TrialRecord], regs: list[TrialRecord], metric: str
                          ) -> tuple[tuple[str, float] | None, claims.Precondition]:
    """The (form, weight) with the lowest mean ``metric`` on the selection trials read here
    (this run, or a selection run read with it: ``raystudy report --with``), or the one the
    claim trials ``regs`` record in ``loss.reg_selection``; the precondition says which."""
    scores = selection_scores(selection, metric)
    if scores:
        best = min(scores, key=lambda k: float(np.nanmean(scores[k])))
        return best, claims.Precondition(
            "the regulariser's form and weight were chosen on selection seeds before U2",
            True, f"chosen on seeds >= {SELECTION_SEEDS}: {best[0]}, weight {best[1]:g} "
            f"(lowest mean of {len(scores)} candidates)")
    recorded = {str(t.setting("loss.reg_selection", "")) for t in regs} - {""}
    return None, claims.Precondition(
        "the regulariser's form and weight were chosen on selection seeds before U2",
        bool(recorded), "; ".join(sorted(recorded)) if recorded else
        f"no selection trials (seeds >= {SELECTION_SEEDS}, spaces/reg.yaml) read here and "
        "no loss.reg_selection recorded")


def selection_table(selection: list[TrialRecord], metric: str, label: str,
                    chosen: tuple[str, float] | None) -> Table:
    """The regulariser's candidates on the selection seeds, best first."""
    scores = selection_scores(selection, metric)
    rows = [[form, weight, len(values), float(np.nanmean(values)),
             float(np.nanstd(values)), "yes" if (form, weight) == chosen else ""]
            for (form, weight), values in sorted(scores.items(),
                                                 key=lambda kv: float(np.nanmean(kv[1])))]
    masks = ", ".join(sorted({str(t.setting("loss.mask", "changed")) for t in selection}))
    weights = sorted({weight for _, weight in scores})
    edge = ""
    if chosen and len(weights) > 1 and chosen[1] in (weights[0], weights[-1]):
        side = "largest" if chosen[1] == weights[-1] else "smallest"
        edge = f"; the chosen weight is the grid's {side}: past it was not tried"
    return Table(f"Regulariser selection: {label} per form and weight on seeds >= "
                 f"{SELECTION_SEEDS} (mask {masks})",
                 ["form", "weight", "seeds", f"mean {label}", "sd", "chosen"], rows,
                 note="U2 reads the chosen form and weight on the claim seeds; the "
                      "selection seeds are read by nothing else" + edge)


# ----------------------------------------------------------------------------- claims
def uniform_claims(arms: dict[str, list[TrialRecord]], steps: int, scope: str,
                   vocab_size: int, selection: Sequence[TrialRecord] = ()) -> list[Claim]:
    """U1-U4 (Holm within U1 and within U2) on ``claim_metric``, then the paper's regimes
    not run."""
    metric, label, exact = claim_metric([t for trials in arms.values() for t in trials], steps)
    nelbo = arms.get("nelbo", [])
    masks = sorted({name.split("/")[1] for name in arms if name.startswith("simple/")})
    collapse = {name: no_collapse(name, trials, steps) for name, trials in arms.items()}
    rows: list[Claim] = []

    u1 = []
    for mask in masks:
        simple, base = paired(by_seed(arms[f"simple/{mask}"], metric), by_seed(nelbo, metric))
        u1.append(claims.Test(
            f"U1: the simple loss is non-inferior to the NELBO in Gen NLL at S = {steps} "
            f"(mask {mask})", f"{label}: simple - nelbo (nats/token)",
            stats.non_inferiority(simple, base, MARGIN, "less"), "less", margin=MARGIN,
            preconditions=(exact, baseline_learned(nelbo, vocab_size),
                           collapse.get("nelbo", no_collapse("nelbo", [], steps)),
                           collapse[f"simple/{mask}"])))
    rows += (claims.holm_family(u1, f"{len(u1)} masks", scope=scope) if u1 and nelbo else
             [claims.missing_claim("U1: the simple loss is non-inferior to the NELBO",
                                   "non-inferiority", "Gen NLL: simple - nelbo",
                                   "the run has no nelbo or no simple trials", scope=scope)])

    all_regs = [t for name, trials in arms.items() if name.startswith("simple_reg/")
                for t in trials]
    chosen, selected = regulariser_selection(list(selection), all_regs, metric)
    u2 = []
    for mask in masks:
        regs = [t for t in arms.get(f"simple_reg/{mask}", [])
                if chosen is None or regulariser(t) == chosen]
        if not regs:
            continue
        reg, simple = paired(by_seed(regs, metric), by_seed(arms[f"simple/{mask}"], metric))
        u2.append(claims.Test(
            f"U2: the regulariser against uniform output (raystudy's reading) improves the "
            f"simple loss's Gen NLL at S = {steps} (mask {mask})",
            f"{label}: simple_reg - simple (nats/token)", stats.paired_comparison(reg, simple),
            "less", preconditions=(exact, selected,
                                   no_collapse(f"simple_reg/{mask}", regs, steps))))
    rows += (claims.holm_family(u2, f"{len(u2)} masks", scope=scope) if u2 else
             [claims.missing_claim("U2: the regulariser improves the simple loss",
                                   "paired sign-flip", "Gen NLL: simple_reg - simple",
                                   "no claim trial of simple_reg" + (
                                       f" with the chosen regulariser ({chosen[0]}, weight "
                                       f"{chosen[1]:g}): run space u2 with it and read that "
                                       "run beside these" if chosen else ""), scope=scope)])

    timed = [t for trials in arms.values() for t in trials
             if math.isfinite(t.metric("time/loss_ms_nelbo"))]
    cost = stats.paired_comparison([t.metric("time/loss_ms_nelbo") for t in timed],
                                   [t.metric("time/loss_ms_simple") for t in timed],
                                   unit="trials")
    ratio = float(np.median([t.metric("time/loss_ms_nelbo") / t.metric("time/loss_ms_simple")
                             for t in timed])) if timed else math.nan
    rows.append(claims.paired_claim(
        "U3: the NELBO's loss + backward costs more than the simple loss's",
        "time of loss + backward: nelbo - simple (ms, the same batch in each trial)", cost,
        "greater", note=f"median ratio nelbo/simple {ratio:.3f}", scope=scope))

    if {"simple/changed", "simple/moved"} <= set(arms):
        changed, moved = paired(by_seed(arms["simple/changed"], metric),
                                 by_seed(arms["simple/moved"], metric))
        rows.append(claims.paired_claim(
            "U4 (raystudy's derivation, not the paper's): masking z != x teaches the "
            "denoiser never to return the observed token, so simple/changed samples worse "
            "than simple/moved", f"{label}: changed - moved (nats/token)",
            stats.paired_comparison(changed, moved), "greater", scope=scope,
            preconditions=(exact, collapse["simple/changed"], collapse["simple/moved"])))
    else:
        rows.append(claims.missing_claim(
            "U4 (raystudy's derivation): simple/changed samples worse than simple/moved",
            "paired sign-flip", "Gen NLL: changed - moved", "the run has not both masks",
            scope=scope))

    rows.append(claims.not_run(
        "The simple loss matches the NELBO in Gen PPL under GPT-2 Large on LM1B and OWT",
        "LM1B / OWT pre-training, Gen PPL under GPT-2 Large",
        "GPT-2 Large is never downloaded at run time; " + (
            "this run's Gen PPL is under the project-trained AR evaluator instead"
            if metric.startswith("eval/gen_nll_ar") else
            "this run trained on a generated stand-in with an exact likelihood (the paper "
            "profile reads token files, scored by a project-trained AR evaluator)")))
    rows.append(claims.not_run("The conclusions scale to larger models", PAPER_SCALE,
                               "this run's models are the profile's small Denoisers"))
    return rows


# ----------------------------------------------------------------------------- report
def invariants(trials: list[TrialRecord]) -> list[str]:
    """The bound's sanity check: val NELBO >= entropy - 3 SE in every Markov trial."""
    markov = [t for t in trials if math.isfinite(t.metric("data/entropy"))]
    below = [t.trial_id for t in markov if t.metric("eval/nelbo") < t.metric("data/entropy")
             - 3 * t.metric("eval/nelbo_se")]
    return [f"Invariant: the validation NELBO is an upper bound on the entropy in "
            f"{len(markov) - len(below)} of {len(markov)} Markov trials"
            + (f" (below it: {', '.join(below)})" if below else "") + "."]


def setting_groups(arms: dict[str, list[TrialRecord]]) -> dict[str, list[TrialRecord]]:
    """The arms, simple_reg split by its form and weight (a run read with another may hold
    several)."""
    groups: dict[str, list[TrialRecord]] = defaultdict(list)
    for name, trials in arms.items():
        for t in trials:
            form, weight = regulariser(t)
            groups[f"{name} ({form}, {weight:g})" if name.startswith("simple_reg/")
                   else name].append(t)
    return groups


def figures(arms: dict[str, list[TrialRecord]], figures_dir: Path, quality: str = "gen_nll",
            label: str = "Gen NLL") -> list[tuple[str, Path]]:
    """Gen NLL (``quality``: exact, or under the AR evaluator) vs sampler steps per arm, and
    entropy vs Gen NLL per trial."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6))
    left, right = fig.subplots(1, 2)
    for name, trials in sorted(arms.items()):
        steps = sampler_steps(trials)
        means = [np.nanmean([t.metric(f"eval/{quality}@{s}") for t in trials]) for s in steps]
        left.plot(steps, means, "o-", label=name)
        right.scatter([t.metric(f"eval/{quality}@{steps[-1]}") for t in trials] if steps else [],
                      [t.metric(f"eval/entropy@{steps[-1]}") for t in trials] if steps else [],
                      label=name, s=14)
    truth = next((t for trials in arms.values() for t in trials), None)
    if truth is not None and math.isfinite(truth.metric("data/entropy")):
        left.axhline(truth.metric("data/entropy"), color="k", ls=":", label="data entropy")
        right.scatter([truth.metric("data/true_gen_nll")],
                      [truth.metric("data/true_sample_entropy")], marker="*", c="k", s=80,
                      label="true samples")
    left.set(xscale="log", xlabel="sampler steps S", ylabel=f"{label} (nats/token)")
    right.set(xlabel=f"{label} (nats/token)", ylabel="sample entropy (nats)")
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    path = save_figure(fig, figures_dir / "gen_nll.png")
    return [(f"{label} vs sampler steps, and sample entropy vs {label}", path)]


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    trials = [t for t in results.trials if t.history]
    if not trials:
        return Analysis(notes=["No trial reported: nothing to analyse."])
    selection = [t for t in trials if is_selection(t)]
    arms: dict[str, list[TrialRecord]] = defaultdict(list)
    for t in trials:
        if not is_selection(t):
            arms[arm(t)].append(t)
    steps = _claim_steps(trials)
    first = trials[0]
    V, L = int(first.setting("data.vocab_size", 32)), int(first.setting("data.seq_len", 32))
    source = first.setting("data.source", "markov")
    data = (f"generated Markov-chain stand-in, not text (V = {V}, L = {L})"
            if source == "markov" else f"{source} text (V = {V}, L = {L})")
    metric, label, _ = claim_metric(trials, steps)
    quality = metric.split("/")[1].split("@")[0]
    evaluator = first.setting("eval.ar_evaluator", "")
    scope = (f"{data}; Denoiser {first.setting('model.d_model', 64)} x "
             f"{first.setting('model.n_layers', 2)}, {first.setting('train.steps', 0)} "
             f"steps; CPU, {first.setting('train.threads', 1)} thread(s)"
             + (f"; Gen NLL under the project-trained AR evaluator {Path(evaluator).name}, "
                f"not GPT-2 Large" if quality == "gen_nll_ar" else ""))
    columns = [m for m in ("gen_nll", "entropy", "bigram_js", "gen_ppl_ar")
               if any(f"eval/{m}@{steps}" in t.last for t in trials)]  # text: no exact ones
    names = {"gen_nll": "Gen NLL", "entropy": "entropy", "bigram_js": "bigram JS",
             "gen_ppl_ar": "Gen PPL (AR evaluator)"}
    rows = []
    for name, members in sorted(setting_groups(arms).items()):
        for s in sampler_steps(members):
            rows.append([name, s, len(members)] + [
                float(np.nanmean([t.metric(f"eval/{m}@{s}") for t in members]))
                for m in columns]
                + [float(np.nanmean([t.metric("eval/nelbo") for t in members]))])
    references = (f"data entropy {first.metric('data/entropy'):.4f} nats/token, "
                  if math.isfinite(first.metric("data/entropy")) else "")
    references += f"true samples' entropy {first.metric('data/true_sample_entropy'):.4f}"
    if math.isfinite(first.metric("data/js_floor")):
        references += f", JS floor {first.metric('data/js_floor'):.4g}"
    if math.isfinite(first.metric("data/val_ppl_ar")):
        references += (f"; the AR evaluator's validation PPL {first.metric('data/val_ppl_ar'):.3g}"
                       f" (unigram NLL {first.metric('data/val_unigram_nll'):.3f} nats/token)")
    table = Table("Metrics per arm and sampler steps (means over trials)",
                  ["arm", "S", "trials", *(names[m] for m in columns), "val NELBO"], rows,
                  note=references)
    chosen, _ = regulariser_selection(selection, [], metric)
    tables = [table, *([selection_table(selection, metric, label, chosen)] if selection
                       else [])]
    return Analysis(
        tables=tables, figures=figures(arms, figures_dir, quality, label),
        claims=uniform_claims(arms, steps, scope, V, selection), notes=invariants(trials),
        summary={"claim_steps": steps, "arms": {k: len(v) for k, v in arms.items()}})
