"""The cell_classifier study's report: the loaders table, the throughput-vs-entropy figure
and the claims (the ``analyze`` hook of its Study).

The claims pair each loader with true random sampling over seeds: block sampling loads
faster (read only when the trials ran one at a time: a throughput is the hardware's), trains
as well (read only when random's classifier learns above chance) and keeps random's plate
diversity (read only when the random loader's minibatches are random); streaming loses
accuracy. Tahoe-100M and GPU training are rows *not run* unless the run had them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from raystudy import Analysis, Claim, RunResults, Table, TrialRecord, claims
from raystudy.algorithms import stats
from raystudy.studies.cell_classifier.config import parse_loader

METRICS = ("eval/accuracy", "train/cells_per_s", "data/cells_per_s", "train/plate_entropy")


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    """One row per loader (mean over seeds), a throughput-vs-entropy figure and the claims."""
    groups: dict[str, list[list[float]]] = {}
    for trial in results.trials:
        if trial.status == "finished":
            groups.setdefault(str(trial.config["sampling.loader"]), []).append(
                [trial.metric(m) for m in METRICS])
    if not groups:
        return Analysis(notes=["no finished trials yet: nothing to tabulate"])
    rows, summary = [], {}
    for loader, values in sorted(groups.items(), key=lambda kv: -np.mean(kv[1], 0)[1]):
        kind, block, fetch = parse_loader(loader)
        mean = np.mean(values, axis=0).tolist()
        rows.append([loader, kind, block or "-", fetch, *mean, len(values)])
        summary[loader] = {"strategy": kind, "block_size": block, "fetch_factor": fetch,
                           **dict(zip(METRICS, mean, strict=True)), "trials": len(values)}
    table = Table("Loaders", ["loader", "strategy", "block", "fetch factor", "accuracy",
                              "train cells/s", "loader cells/s", "plate entropy (bits)",
                              "trials"], rows,
                  note="means over trials; loader cells/s = cells per second spent waiting "
                       "on Ray Data, train cells/s = end to end, both after the first "
                       "minibatch; compare throughputs of trials run one at a time "
                       "(--max-concurrent 1)")
    figure = plot_loaders(summary, figures_dir / "loaders.png")
    return Analysis(tables=[table], figures=[("throughput vs plate entropy", figure)],
                    summary={"loaders": summary}, claims=loader_claims(results))


THROUGHPUT_CLAIM = "block sampling loads cells faster than true random sampling"
ACCURACY_CLAIM = ("block sampling trains the cell-line classifier as well as true random "
                  "sampling")
DIVERSITY_CLAIM = "block sampling keeps the plate diversity of true random minibatches"
STREAMING_CLAIM = "streaming in file order loses accuracy against true random sampling"
CHANCE_MARGIN = 0.10
"""A loader's classifier learns when its accuracy is this far above chance (1 / cell
lines): 10 points, far below what every loader but streaming reaches."""
ACCURACY_MARGIN = 0.02
""""As well as random": block sampling's accuracy at most 2 points below random's (the
quick runs' accuracies move in the third decimal between runs)."""
DIVERSITY_SHARE = 0.97
""""Keeps the diversity": block minibatches' plate entropy at least 97 % of random's, the
target the sampling benchmark reads (bench/README.md)."""
RANDOM_ENTROPY_SHARE = 0.95
"""The random loader is random: its minibatches' measured plate entropy reaches 95 % of
what random minibatches of the collection's plates have in expectation."""
TAHOE = "Tahoe-100M on disk (100.6M cells x 62,710 genes, 14 plate .h5ad files, 50 cell lines)"



def _finished(results: RunResults) -> list[TrialRecord]:
    """The run's finished trials."""
    return [t for t in results.trials if t.status == "finished"]


def _request(results: RunResults) -> dict[str, Any]:
    """What the run was asked for (empty for hand-built results)."""
    return getattr(results, "request", None) or {}


def _one_value(trials: list[TrialRecord], key: str, default: Any) -> str:
    """The distinct values of a config key over the trials, joined by '/'."""
    return "/".join(sorted({str(t.setting(key, default)) for t in trials}))


def run_scope(results: RunResults) -> str:
    """What the verdicts hold for: the collection (generated stand-in or the files read),
    the disk it is read from, the batch, and the hardware: CPU, threads, trials at once."""
    trials = _finished(results)
    paths = sorted({str(t.setting("data.path", "")) for t in trials})
    data = []
    if "" in paths:
        data.append(
            f"a generated AnnData collection ({_one_value(trials, 'data.cells', 24000)} cells "
            f"x {_one_value(trials, 'data.genes', 256)} genes, "
            f"{_one_value(trials, 'data.plates', 4)} plate files, "
            f"{_one_value(trials, 'data.cell_lines', 16)} cell lines) on local disk "
            "(data.cache_dir): a stand-in for Tahoe-100M, not Tahoe-100M")
    data += [f".h5ad files at {p}" for p in paths if p]
    request = _request(results)
    gpus = float((request.get("compute") or {}).get("gpus_per_worker", 0) or 0)
    at_once = request.get("max_concurrent")
    concurrency = ("trials one at a time" if at_once == 1 else
                   f"up to {at_once} trials at once" if at_once else
                   "trials at once as the CPUs allow")
    hardware = "GPU" if gpus > 0 else f"CPU, train.threads={_one_value(trials, 'train.threads', 1)}"
    return (f"{'; '.join(data) or 'no finished trial'}; batch "
            f"{_one_value(trials, 'train.batch_size', 64)}, "
            f"{_one_value(trials, 'data.read_concurrency', 2)} Ray Data read tasks per trial; "
            f"{hardware}, {concurrency}")


def by_loader_and_seed(results: RunResults, metric: str, transform: Any = float
                       ) -> dict[str, dict[int, float]]:
    """``{loader: {seed: transform(metric)}}`` of the finished trials reporting a finite
    metric."""
    out: dict[str, dict[int, float]] = {}
    for trial in _finished(results):
        value = trial.metric(metric)
        if math.isfinite(value):
            out.setdefault(str(trial.setting("sampling.loader", "")), {})[
                int(trial.setting("train.seed", 0))] = transform(value)
    return out


def trials_one_at_a_time(results: RunResults) -> claims.Precondition:
    """Throughputs are comparable only when the trials did not share the cores."""
    at_once = _request(results).get("max_concurrent")
    return claims.Precondition(
        "the trials ran one at a time, so no two loaders shared the CPUs while timed",
        at_once == 1, "--max-concurrent 1 (the profile's sweep.max_concurrent or the command "
        "line)" if at_once == 1 else f"max_concurrent {at_once}: trials ran side by side"
        if at_once else "no max_concurrent: as many trials at once as the CPUs allowed")


def chance_level(results: RunResults) -> float:
    """1 / cell lines, from the trials' reported class count (or the generated
    collection's configured one); nan when neither is known."""
    for trial in _finished(results):
        classes = trial.metric("data/classes")
        if not math.isfinite(classes) and not trial.setting("data.path", ""):
            classes = float(trial.setting("data.cell_lines", 16))
        if math.isfinite(classes) and classes > 0:
            return 1.0 / classes
    return math.nan


def random_learns(accuracy: dict[str, dict[int, float]], chance: float
                  ) -> claims.Precondition:
    """True random sampling trains a classifier above chance: there is accuracy to keep."""
    values = list(accuracy.get("random", {}).values())
    mean = float(np.mean(values)) if values else math.nan
    need = chance + CHANCE_MARGIN
    return claims.Precondition(
        f"the classifier learns from true random minibatches: accuracy at least "
        f"{CHANCE_MARGIN:g} above chance", bool(values) and mean >= need,
        f"random's accuracy {mean:.3f} over {len(values)} seeds, chance {chance:.3f} "
        f"(needs >= {need:.3f})" if values else "no random trial finished")


def random_is_random(results: RunResults) -> claims.Precondition:
    """The random loader's minibatches have the plate mix random minibatches should."""
    measured, expected = [], []
    for trial in _finished(results):
        if str(trial.setting("sampling.loader", "")) == "random":
            measured.append(trial.metric("train/plate_entropy"))
            expected.append(trial.metric("train/random_plate_entropy"))
    m, e = (float(np.nanmean(v)) if v else math.nan for v in (measured, expected))
    return claims.Precondition(
        f"the random loader's minibatches are random: plate entropy at least "
        f"{RANDOM_ENTROPY_SHARE:.0%} of random minibatches' expected entropy",
        math.isfinite(m) and math.isfinite(e) and m >= RANDOM_ENTROPY_SHARE * e,
        f"measured {m:.3f} bits, expected {e:.3f} bits over {len(measured)} trials")


def _pair(values: dict[str, dict[int, float]], loader: str) -> tuple[list[float], list[float]]:
    """A loader's values and random's on the seeds both ran."""
    seeds = sorted(set(values.get(loader, {})) & set(values.get("random", {})))
    return [values[loader][s] for s in seeds], [values["random"][s] for s in seeds]


def loader_claims(results: RunResults) -> list[Claim]:
    """scDataset's claims on the run's loaders, paired over seeds, Holm across the block
    loaders within each: block loads faster than random (log10 loader throughput), trains
    as well (accuracy, non-inferiority) and keeps random's plate diversity; streaming
    loses accuracy; then the paper's regimes this run did not cover."""
    scope = run_scope(results)
    rates = by_loader_and_seed(results, "data/cells_per_s", math.log10)
    accuracy = by_loader_and_seed(results, "eval/accuracy")
    entropy = by_loader_and_seed(results, "train/plate_entropy")
    blocks = sorted(name for name in rates if name.startswith("block"))
    learns = random_learns(accuracy, chance_level(results))
    rows: list[Claim] = []
    if "random" not in rates or not blocks:
        why = "the sweep needs the random loader and a block loader"
        rows += [claims.missing_claim(statement, "paired over seeds", effect, why, scope=scope)
                 for statement, effect in (
                     (THROUGHPUT_CLAIM, "log10 loader cells/s, block minus random"),
                     (ACCURACY_CLAIM, "accuracy, block minus random"),
                     (DIVERSITY_CLAIM, "plate entropy (bits), block minus random"))]
    else:
        family = f"{len(blocks)} block loaders"
        timed = trials_one_at_a_time(results)
        rows += claims.holm_family([claims.Test(
            f"{THROUGHPUT_CLAIM} ({loader})", "log10 loader cells/s, block minus random",
            stats.paired_comparison(*_pair(rates, loader)), "greater",
            preconditions=(timed,)) for loader in blocks], family, scope=scope)
        rows += claims.holm_family([claims.Test(
            f"{ACCURACY_CLAIM} ({loader})", "accuracy, block minus random",
            stats.non_inferiority(*_pair(accuracy, loader), ACCURACY_MARGIN), "greater",
            margin=ACCURACY_MARGIN, note=f"non-inferiority margin {ACCURACY_MARGIN:g}",
            preconditions=(learns,)) for loader in blocks], family, scope=scope)
        random_entropy = float(np.mean(list(entropy.get("random", {}).values()) or [math.nan]))
        margin = (1 - DIVERSITY_SHARE) * random_entropy if math.isfinite(random_entropy) else 0.0
        rows += claims.holm_family([claims.Test(
            f"{DIVERSITY_CLAIM} ({loader})", "plate entropy (bits), block minus random",
            stats.non_inferiority(*_pair(entropy, loader), margin), "greater", margin=margin,
            note=f"non-inferiority margin {margin:.3g} bits: {1 - DIVERSITY_SHARE:.0%} of "
                 "random's plate entropy", preconditions=(random_is_random(results),))
            for loader in blocks], family, scope=scope)
    streaming = sorted(name for name in accuracy if name.startswith("streaming"))
    if streaming and "random" in accuracy:
        rows += claims.holm_family([claims.Test(
            f"{STREAMING_CLAIM} ({loader})", "accuracy, streaming minus random",
            stats.paired_comparison(*_pair(accuracy, loader)), "less",
            preconditions=(learns,)) for loader in streaming],
            f"{len(streaming)} streaming loaders", scope=scope)
    else:
        rows.append(claims.missing_claim(STREAMING_CLAIM, "paired over seeds",
                                         "accuracy, streaming minus random",
                                         "the sweep needs the random and a streaming loader",
                                         scope=scope))
    return rows + regimes_not_run(results)


def regimes_not_run(results: RunResults) -> list[Claim]:
    """The paper's data and hardware where this run had neither: Tahoe-100M (the run read
    a generated collection) and GPU training (the run had no GPU)."""
    trials = _finished(results)
    rows = []
    if not any(t.setting("data.path", "") for t in trials):
        rows.append(claims.not_run(
            "block 16 / fetch 256 loads Tahoe-100M more than two orders of magnitude faster "
            "than true random sampling and trains as well", TAHOE,
            "this run read a generated collection; the paper profile reads Tahoe-100M's "
            "plate files (--set data.path=...), which are not on this machine"))
    gpus = float((_request(results).get("compute") or {}).get("gpus_per_worker", 0) or 0)
    if gpus <= 0:
        rows.append(claims.not_run(
            "block sampling feeds GPU training from disk with several workers (the paper: "
            "about 4,600 cells/s with 4 workers)", "CUDA GPUs, 4 workers per trial",
            "this run had no GPU (--gpus-per-worker 0): its throughputs are CPU-bound"))
    return rows


def plot_loaders(summary: dict[str, dict[str, Any]], path: Path) -> Path:
    """Left: loader throughput vs plate entropy (log x); right: accuracy per loader."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {"random": "tab:red", "streaming": "tab:gray", "block": "tab:blue"}
    names = list(summary)
    for name in names:
        s = summary[name]
        left.scatter(s["data/cells_per_s"], s["train/plate_entropy"],
                     color=colors[s["strategy"]], s=40)
        left.annotate(name, (s["data/cells_per_s"], s["train/plate_entropy"]), fontsize=7,
                      xytext=(3, 3), textcoords="offset points")
    left.set_xscale("log")
    left.set_xlabel("loader throughput (cells/s)")
    left.set_ylabel("mean minibatch plate entropy (bits)")
    left.grid(alpha=0.3)
    right.bar(range(len(names)), [summary[n]["eval/accuracy"] for n in names],
              color=[colors[summary[n]["strategy"]] for n in names])
    right.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=7)
    right.set_ylabel("validation accuracy")
    right.set_ylim(0, 1)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
