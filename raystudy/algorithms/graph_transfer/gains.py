r"""From per-run metrics to the study's quantities: paired gains, CTS, statistics, verdicts.

A *record* is one mechanism's run on one cell: ``protocol``, ``dataset``, ``backbone``,
``mechanism``, ``seed`` and its ``metrics`` (``nc_acc``, ``lp_auc``, ``stats/...``).
The gain of a transfer row on a seed is paired with that seed's single-task baseline
under the same protocol, dataset and backbone:

.. math::  \Delta_{row} = m_T^{row} - m_T^{single},

:math:`m_T` the target's test metric (NC accuracy, LP ROC-AUC). Joint mechanisms give
two rows, one per task. The CTS (:mod:`.cts`) is computed per seed the same way.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..stats import CONTRADICTED, SUPPORTED, ClusteredSlope, clustered_slope
from ..stats import verdict as stats_verdict
from .cts import cotask_score
from .mechanisms import MECHANISMS
from .recommend import leave_one_dataset_out, recommend
from .stats import STATISTICS

Key = tuple[str, str, str, str, int]      # protocol, dataset, backbone, mechanism, seed
METRIC = {"nc": "nc_acc", "lp": "lp_auc"}


def transfer_rows() -> list[tuple[str, str, str]]:
    """(row label, mechanism, target task) for every non-baseline mechanism."""
    rows = []
    for mech in MECHANISMS.values():
        if mech.kind == "single":
            continue
        for task in (("nc", "lp") if mech.target == "both" else (mech.target,)):
            label = f"{mech.name}:{task}" if mech.target == "both" else mech.name
            rows.append((label, mech.name, task))
    return rows


def index(records: Iterable[Mapping[str, Any]]) -> dict[Key, dict[str, float]]:
    return {(r["protocol"], r["dataset"], r["backbone"], r["mechanism"], int(r["seed"])):
            dict(r["metrics"]) for r in records}


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def paired_gains(runs: Mapping[Key, Mapping[str, float]],
                 protocol: str) -> dict[tuple[str, str, str], dict[int, float]]:
    """``{(dataset, backbone, row): {seed: gain}}`` under ``protocol``."""
    out: dict[tuple[str, str, str], dict[int, float]] = defaultdict(dict)
    rows = transfer_rows()
    for (proto, dataset, backbone, mechanism, seed), metrics in runs.items():
        if proto != protocol:
            continue
        for label, mech, task in rows:
            if mech != mechanism:
                continue
            base = runs.get((proto, dataset, backbone, task, seed), {}).get(METRIC[task])
            value = metrics.get(METRIC[task])
            if _finite(base) and _finite(value):
                out[(dataset, backbone, label)][seed] = value - base
    return dict(out)


def mean_std(values: Iterable[float]) -> tuple[float, float, int]:
    values = [v for v in values if _finite(v)]
    if not values:
        return math.nan, math.nan, 0
    return float(np.mean(values)), float(np.std(values)), len(values)


def cts_by_seed(runs: Mapping[Key, Mapping[str, float]],
                protocol: str) -> dict[tuple[str, str, str], dict[int, float]]:
    """``{(dataset, backbone, joint mechanism): {seed: CTS}}`` under ``protocol``."""
    out: dict[tuple[str, str, str], dict[int, float]] = defaultdict(dict)
    for (proto, dataset, backbone, mechanism, seed), m in runs.items():
        if proto != protocol or MECHANISMS.get(mechanism) is None or \
                MECHANISMS[mechanism].target != "both":
            continue
        nc = runs.get((proto, dataset, backbone, "nc", seed), {})
        lp = runs.get((proto, dataset, backbone, "lp", seed), {})
        values = [m.get("nc_acc"), nc.get("nc_acc"), m.get("lp_auc"), lp.get("lp_auc"),
                  m.get("nc_chance")]
        if all(_finite(v) for v in values):
            out[(dataset, backbone, mechanism)][seed] = cotask_score(*values[:4], values[4])
    return dict(out)


def dataset_statistics(runs: Mapping[Key, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Mean of each training-graph statistic per dataset, over every run that reported it."""
    seen: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (_, dataset, *_rest), metrics in runs.items():
        for stat in STATISTICS:
            value = metrics.get(f"stats/{stat}")
            if _finite(value):
                seen[dataset][stat].append(value)
    return {d: {s: float(np.mean(v)) for s, v in stats.items()} for d, stats in seen.items()}


def recommendations(gains: Mapping[tuple[str, str, str], Mapping[int, float]],
                    stats: Mapping[str, Mapping[str, float]], backbone: str, task: str,
                    alpha: float = 1.0) -> dict[str, Any]:
    """In-sample recommendations and the LODO check for one backbone and target task."""
    table: dict[str, dict[str, float]] = defaultdict(dict)
    for (dataset, bb, label), by_seed in gains.items():
        mech = label.split(":")[0]
        target = label.split(":")[1] if ":" in label else MECHANISMS[mech].target
        if bb == backbone and target == task and dataset in stats:
            table[dataset][label] = mean_std(by_seed.values())[0]
    features = {d: [stats[d].get(s, math.nan) for s in STATISTICS] for d in table}
    features = {d: f for d, f in features.items() if all(math.isfinite(v) for v in f)}
    table = {d: g for d, g in table.items() if d in features}
    if not table:
        return {"in_sample": {}, "lodo": leave_one_dataset_out({}, {}, alpha)}
    return {"in_sample": recommend(table, features, alpha),
            "lodo": leave_one_dataset_out(table, features, alpha)}


def gain_fit(gains: Mapping[tuple[str, str, str], Mapping[int, float]],
             x_by_dataset: Mapping[str, float], row: str,
             backbone: str | None = None) -> ClusteredSlope:
    """Slope of a row's gain on a per-dataset quantity (edge homophily, feature SNR),
    clustered by dataset.

    Every per-seed gain (of one backbone, or of all pooled) is an observation of its
    dataset; the line is fit through the dataset means with a t interval on
    (datasets - 2) df (:func:`raystudy.algorithms.stats.clustered_slope`): the seeds of a
    dataset share its graph, so five graphs are five points, however many seeds.
    """
    x, y, cluster = [], [], []
    for (dataset, bb, label), by_seed in gains.items():
        if label != row or (backbone is not None and bb != backbone) or \
                dataset not in x_by_dataset:
            continue
        for gain in by_seed.values():
            x.append(x_by_dataset[dataset])
            y.append(gain)
            cluster.append(dataset)
    return clustered_slope(x, y, cluster)


def homophily_fit(gains: Mapping[tuple[str, str, str], Mapping[int, float]],
                  stats: Mapping[str, Mapping[str, float]], row: str,
                  backbone: str | None = None) -> ClusteredSlope:
    """Slope of a row's gain on edge homophily, clustered by dataset (:func:`gain_fit`)."""
    homophily = {d: s.get("edge_homophily", math.nan) for d, s in stats.items()}
    return gain_fit(gains, homophily, row, backbone)


def dataset_parameter(runs: Mapping[Key, Mapping[str, float]], key: str) -> dict[str, float]:
    """Per dataset, the mean of a value its runs report (``feature_snr``: a CSBM's s);
    datasets whose runs do not report it are left out."""
    seen: dict[str, list[float]] = defaultdict(list)
    for (_, dataset, *_rest), metrics in runs.items():
        if _finite(metrics.get(key)):
            seen[dataset].append(float(metrics[key]))
    return {d: float(np.mean(v)) for d, v in seen.items()}


def homophily_trend(gains: Mapping[tuple[str, str, str], Mapping[int, float]],
                    stats: Mapping[str, Mapping[str, float]], row: str,
                    backbone: str | None = None) -> dict[str, float]:
    """:func:`homophily_fit` as a plain dict: slope, low, high, intercept, p, n (datasets),
    runs."""
    fit = homophily_fit(gains, stats, row, backbone)
    return {"slope": fit.slope, "low": fit.ci_low, "high": fit.ci_high,
            "intercept": fit.intercept, "p": fit.p_value, "n": fit.clusters,
            "runs": fit.observations}


def verdict(trend: Mapping[str, float], what: str = "NC->LP warm start") -> str:
    """One sentence saying whether the gain rises with homophily, from the slope's CI
    (read by :func:`raystudy.algorithms.stats.verdict`, claimed direction: rising)."""
    slope, low, high = trend["slope"], trend["low"], trend["high"]
    if not math.isfinite(slope):
        return f"{what}: too few datasets to fit a trend against homophily (n={trend['n']})"
    ci = f"slope {slope:+.3f} per unit of edge homophily, 95% CI [{low:+.3f}, {high:+.3f}], " \
         f"n={trend['n']} datasets ({trend.get('runs', '?')} runs)"
    reading = stats_verdict(low, high, "greater", trend["n"], trend.get("p"))
    if reading == SUPPORTED:
        return f"{what} helps more as homophily rises ({ci})"
    if reading == CONTRADICTED:
        return f"{what} helps less as homophily rises ({ci})"
    return f"{what}: no clear trend with homophily ({ci})"
