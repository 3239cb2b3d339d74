"""Fully dynamic k-center with outliers: layered sampling (raystudy's reconstruction) against
radius guessing, with the cost in distance evaluations as the aspect ratio grows.

Paper: Huang, Li, Zhang, Li, Wang, Feng, "New Algorithms for Fully-Dynamic k-center with
Outliers" (ICML 2026 poster 64005). Claims of the abstract tested here: existing algorithms
guess the radius, so their update and query times depend on the aspect ratio Delta; a
layered-sampling framework needs no radius guess, so its costs do not, and it keeps a
constant approximation discarding at most (1 + eps) z outliers. No full text and no code
are public: ``algorithm.name=layered_reconstructed`` is **raystudy's reconstruction** from
the abstract (``raystudy.algorithms.kcenter.layered``), not the authors' algorithm, and its
O~(k^2/eps^4) bound is never claimed (a "not run" row). Baselines: CLSW-style radius
guessing (Chan, Lattanzi, Sozio, Wang, Algorithmica 2024) and Charikar et al.'s offline
greedy recomputed at every query.

Launch::

    raystudy sweep dynamic_kcenter --profile quick                   # 72 trials, 2 CPUs, minutes
    raystudy run dynamic_kcenter --in-process --set algorithm.name=radius_guessing \\
        --set data.log10_delta=12
    raystudy data make-kcenter points.csv                            # then:
    raystudy run dynamic_kcenter --in-process --set data.kind=file --set data.path=points.csv
    raystudy sweep dynamic_kcenter --profile paper --address auto    # a cluster

A trial = one algorithm x log10 Delta x seed on one stream: the window's rows are inserted,
then ``stream.updates`` updates run on the cadence (one step = one update). Every
``eval.every`` updates the structure is queried once, and the trial reports the cost in
distance evaluations (the primary, machine-independent metric: process time is secondary,
since trials share the CPUs), the answer's radius, its ratio to the offline greedy on the
same live points and, on the newest ``eval.tiny_n`` rows, to the exact optimum, and the
violations (more than floor((1 + eps) z) outliers, more than k centers, a deleted center),
recomputed here from the coordinates rather than read from the structure. The offline
greedy and the exact optimum run through ``ctx.map``. The checkpoint holds the structure
pickled with its generator, the live rows and the counters, so a resumed trial is
bit-identical to an uninterrupted one.
"""

from __future__ import annotations

import pickle
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from raystudy import Metric, Study, TrialContext
from raystudy.algorithms.kcenter import (
    KCenterSolution,
    LayeredSampling,
    OfflineRecompute,
    RadiusGuessing,
    exact_kcenter,
    offline_greedy,
)
from raystudy.algorithms.kcenter.core import budget_of
from raystudy.studies.dynamic_kcenter.analysis import analyze
from raystudy.studies.dynamic_kcenter.config import (
    DynamicKCenterConfig,
    knobs_of,
    rows_of,
    z_of,
)
from raystudy.studies.dynamic_kcenter.data import (
    DATA_COMMANDS,
    PDIST_MAX,
    Instance,
    check_data,
    extent,
    instance_of,
)

REFERENCE_BYTES = 32
"""Peak bytes per entry of the n x n matrices behind one offline greedy (the distances, the
temporaries that build them, the greedy's balls): memory_estimate's constant."""
RADIUS_TOLERANCE = 1e-9
"""Relative slack when recounting the points beyond an answer's radius (rounding only)."""


# ----------------------------------------------------------------------------- structures
def make_structure(config: DynamicKCenterConfig, k: int, z: int, d_min: float, d_max: float,
                   knobs: dict[str, Any]) -> Any:
    """A fresh structure of the config's algorithm; ``d_min``, ``d_max`` are RG's level range
    (the instance's smallest and largest distance, given exactly as CLSW's code requires)."""
    name, eps = config.algorithm.name, config.problem.eps
    if name == "layered_reconstructed":
        return LayeredSampling(k, z, eps, seed=config.seed, **knobs)
    if name == "radius_guessing":
        return RadiusGuessing(k, z, eps, d_min=d_min, d_max=d_max, seed=config.seed)
    return OfflineRecompute(k, z, eps)


@dataclass
class Run:
    """What a checkpoint holds: the structure (its generator inside), the live rows, and the
    counters the metrics are read from."""

    structure: Any
    id_of: dict[int, int] = field(default_factory=dict)
    """Live row -> the id the structure gave it."""
    row_of: dict[int, int] = field(default_factory=dict)
    """Every id ever given -> its row (a deleted center stays recognisable)."""
    fill_ops: int = 0
    query_ops: int = 0
    adversary_ops: int = 0
    """Distances of the delete_centers adversary's queries: charged to no update."""
    updates: int = 0
    queries: int = 0
    update_seconds: float = 0.0
    query_seconds: float = 0.0
    violations: int = 0
    ratios: list[float] = field(default_factory=list)
    offline_radii: list[float] = field(default_factory=list)
    tiny_ratios: list[float] = field(default_factory=list)


def apply(run: Run, X: np.ndarray, op: str, row: int) -> None:
    """One stream update on the structure (``X (N, d)`` the rows); ``delete_center``
    queries and deletes the first center returned (an adaptive adversary)."""
    s, started = run.structure, time.process_time()
    if op == "insert":
        i = s.insert(X[row])
        run.id_of[row], run.row_of[i] = i, row
    elif op == "delete":
        s.delete(run.id_of.pop(row))
    else:
        asked, before = time.process_time(), s.ops
        centers = s.query().centers
        run.adversary_ops += s.ops - before
        run.update_seconds -= time.process_time() - asked
        if centers and run.id_of.get(run.row_of[centers[0]]) == centers[0]:
            s.delete(centers[0])
            del run.id_of[run.row_of[centers[0]]]
    run.update_seconds += time.process_time() - started
    run.updates += 1


def fill(config: DynamicKCenterConfig, inst: Instance) -> Run:
    """A new structure with the window's rows inserted; its cost is kept apart."""
    run = Run(make_structure(config, config.problem.k, z_of(config), inst.d_min, inst.d_max,
                             knobs_of(config)))
    for op, row in inst.updates[: config.stream.window]:
        apply(run, inst.X, op, row)
    run.fill_ops, run.updates, run.update_seconds = run.structure.ops, 0, 0.0
    return run


# ----------------------------------------------------------------------------- evaluation
def reference(item: tuple[str, np.ndarray, int, int]) -> float:
    """The offline greedy's radius (``"offline"``: exactly z outliers) or the optimum
    (``"exact"``) on points ``(n, d)``; run by ``ctx.map``, anywhere."""
    kind, points, k, z = item
    solve = offline_greedy if kind == "offline" else exact_kcenter
    return solve(points, k, z).radius


def violations(solution: KCenterSolution, run: Run, X: np.ndarray, k: int, budget: int) -> int:
    """Breaches of the answer's invariants, recounted from the coordinates ``X (N, d)``:
    more than ``k`` centers, a deleted center, more than ``budget`` live points beyond
    the radius (each counts 1)."""
    live = X[np.fromiter(run.id_of, dtype=np.int64, count=len(run.id_of))]
    dead = any(run.id_of.get(run.row_of[c]) != c for c in solution.centers)
    dist = np.full(len(live), np.inf)
    for c in solution.centers:
        dist = np.minimum(dist, np.linalg.norm(live - X[run.row_of[c]], axis=1))
    beyond = int(np.sum(dist > solution.radius * (1 + RADIUS_TOLERANCE)))
    return int(len(solution.centers) > k) + int(dead) + int(beyond > budget)


def tiny_radius(config: DynamicKCenterConfig, points: np.ndarray) -> float:
    """The trial's algorithm, fresh and with its default knobs, on the tiny instance
    ``points (m, d)`` (z = eval.tiny_z): its answer's radius."""
    d_min, d_max = extent(points)
    s = make_structure(config, config.problem.k, config.eval.tiny_z, d_min, d_max, {})
    for p in points:
        s.insert(p)
    return float(s.query().radius)


def _summary(values: list[float], name: str) -> dict[str, float]:
    if not values:
        return {}
    return {f"{name}_mean": float(np.mean(values)), f"{name}_max": float(np.max(values))}


def evaluate(config: DynamicKCenterConfig, inst: Instance, run: Run,
             ctx: TrialContext) -> dict[str, float]:
    """Query once; the cost, quality and invariant metrics of the run so far."""
    s, k, z, e = run.structure, config.problem.k, z_of(config), config.eval
    started, before = time.process_time(), s.ops
    solution = s.query()
    run.query_seconds += time.process_time() - started
    run.query_ops += s.ops - before
    run.queries += 1
    run.violations += violations(solution, run, inst.X, k, budget_of(z, config.problem.eps))
    rows = np.array(sorted(run.id_of), dtype=np.int64)      # the snapshot, ascending rows
    newest = sorted(run.id_of, key=run.id_of.__getitem__)[-e.tiny_n:] if e.tiny_n else []
    items = [("offline", inst.X[rows], k, z)] if len(rows) <= e.offline_max_n else []
    if 0 < e.tiny_n <= len(rows):
        items.append(("exact", inst.X[newest], k, e.tiny_z))
    refs = dict(zip([item[0] for item in items], ctx.map(reference, items), strict=True))
    out = {"eval/radius": solution.radius, "eval/centers": float(len(solution.centers)),
           "eval/outliers_used": float(len(solution.outliers))}
    if refs.get("offline", 0.0) > 0:
        out["eval/ratio_vs_offline"] = solution.radius / refs["offline"]
        out["data/offline_radius"] = refs["offline"]
        run.ratios.append(out["eval/ratio_vs_offline"])
        run.offline_radii.append(refs["offline"])
    if refs.get("exact", 0.0) > 0:
        out["eval/ratio_vs_opt"] = tiny_radius(config, inst.X[newest]) / refs["exact"]
        run.tiny_ratios.append(out["eval/ratio_vs_opt"])
    updates = max(run.updates, 1)
    out.update({
        "eval/dist_evals_per_update":
            (s.ops - run.fill_ops - run.query_ops - run.adversary_ops) / updates,
        "eval/dist_evals_per_query": run.query_ops / run.queries,
        "eval/dist_evals_fill": float(run.fill_ops),
        "eval/violations": float(run.violations),
        "eval/queries": float(run.queries), "eval/updates": float(run.updates),
        **_summary(run.ratios, "eval/ratio_vs_offline"),
        **_summary(run.tiny_ratios, "eval/ratio_vs_opt"),
        "data/n_live": float(len(rows)), "data/z": float(z),
        "data/budget": float(budget_of(z, config.problem.eps)),
        "data/log10_delta_realised": inst.log10_delta,
        "time/update_us": 1e6 * run.update_seconds / updates,
        "time/query_ms": 1e3 * run.query_seconds / run.queries,
    })
    if run.offline_radii:
        out["data/offline_radius_mean"] = float(np.mean(run.offline_radii))
    if config.data.kind in ("twins", "far_outliers"):
        out["data/log10_delta_target"] = config.data.log10_delta
    for key, attr in (("algo/layers", "n_layers"), ("algo/builds", "builds"),
                      ("algo/levels", "levels")):
        if hasattr(s, attr):
            out[key] = float(getattr(s, attr))
    return out


# ----------------------------------------------------------------------------- loop
def train_loop(config: DynamicKCenterConfig, ctx: TrialContext) -> None:
    inst = instance_of(config)
    state = ctx.load_checkpoint()
    run = pickle.loads(state["run"]) if state is not None else fill(config, inst)
    window = config.stream.window
    cadence = ctx.cadence(config.stream.updates, config.eval.every, config.eval.checkpoint_every)
    for step in cadence:
        op, row = inst.updates[window + step - 1]
        apply(run, inst.X, op, row)
        if cadence.evaluates(step):
            metrics = evaluate(config, inst, run, ctx)
            checkpoint = {"run": pickle.dumps(run)} if cadence.checkpoints(step) else None
            ctx.report(metrics, checkpoint=checkpoint, step=step)


def memory_estimate(config: DynamicKCenterConfig) -> tuple[int, str]:
    """Peak bytes of a trial: the n x n matrices of one offline greedy (the reference, and
    every query of offline_recompute), pdist over the rows when they are few, the rows."""
    s = config.stream
    n_live = s.window + 1 if s.kind != "random" else (3 * s.window) // 2
    m = n_live if config.algorithm.name == "offline_recompute" else min(
        n_live, config.eval.offline_max_n)
    N = rows_of(s)
    pairs = N * (N - 1) // 2 if N <= PDIST_MAX else 0
    detail = (f"stream.window={s.window}, eval.offline_max_n={config.eval.offline_max_n}, "
              f"algorithm.name={config.algorithm.name}")
    return REFERENCE_BYTES * m * m + 8 * pairs + 64 * N * config.data.d, detail


STUDY = Study(
    name="dynamic_kcenter",
    description="fully dynamic k-center with outliers: layered sampling (raystudy's "
                "reconstruction from the abstract) vs radius guessing and the offline greedy, "
                "cost in distance evaluations as the aspect ratio Delta grows",
    config_cls=DynamicKCenterConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/dist_evals_per_update", "min",
               "distance evaluations per update, amortised (rebuilds included)"),
        Metric("eval/dist_evals_per_query", "min", "distance evaluations per query"),
        Metric("eval/radius", "min",
               "covering radius of the answer after discarding floor((1+eps) z) points"),
        Metric("eval/violations", "min",
               "invariant breaches so far: outliers over budget, centers over k, dead centers"),
    ),
    analyze=analyze,
    check_data=check_data,
    memory_estimate=memory_estimate,
    supports_workers=False,
    data_commands=DATA_COMMANDS,
)
