"""Is a studentized spherical-harmonic energy test sized, normal and powerful? (two-sample study)

Paper: "A Studentized Spherical Harmonics-Based Nonparametric Two-Sample Test for
Compositional and Directional Data" (ICML 2026 poster 64099; only the abstract is public).
Claims of the abstract: compositions mapped to the sphere and compared by an energy
statistic built from spherical harmonics, studentized, are asymptotically N(0, 1), so no
permutation or bootstrap is needed; simulations show convergence to the limit, size
control, and improved power in certain scenarios, where log-ratio tests detect only mean
differences. The test is raystudy's reconstruction (raystudy/algorithms/two_sample/, each
open choice named there and in docs/compositional_two_sample.md); this study judges it by
Monte Carlo, every method on the same replicates:

* size within +-0.02 of alpha at every null configuration (TOST over batches);
* the KS distance of the studentized statistic to N(0, 1) falls with n (a slope over n);
* power above every other general-purpose test the study runs (the log-ratio mean tests,
  the kernel and energy tests, the Dirichlet likelihood-ratio test) on the same-mean
  alternatives (paired over batches, Holm over the tests), each power verdict gated on
  both tests holding their size at the run's nulls, with size-adjusted power beside it;
* power non-inferior to the permutation energy test within 5 points at every alternative,
  at a fraction of its time per test.

Launch::

    raystudy sweep compositional_two_sample --profile quick       # 2 CPUs, < 1 min
    raystudy sweep compositional_two_sample --profile quick --space claim   # ~11 min
    raystudy sweep compositional_two_sample --profile paper --map-tasks 4   # a cluster
    raystudy run compositional_two_sample --in-process --set data.scenario=mixture/0.3

A trial is one configuration (scenario = family and effect, n, m, D, the harmonic test's
degree, distance and studentizations) run as ``mc.batches`` batches of ``mc.reps``
replicates. Each batch is one cadence step: the steps still to do go to ``ctx.map`` a
round of ``ctx.slots`` batches at a time, and every batch is reported (its rejection rate
per method is one unit of the paired tests; its p-value CDF per method, at a grid of
multiples of alpha, gives the report each test's size-adjusted power) and checkpointed, so
a resumed trial continues at the next batch. ``analysis.py`` (beside this recipe) turns
the batches into the tables, figures and claims.
"""

from __future__ import annotations

import functools
import math
import time
import zlib
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from raystudy import (
    DataError,
    Metric,
    MissingDataError,
    Study,
    TrialContext,
)
from raystudy.algorithms.two_sample import (
    METHODS,
    Scenario,
    default_methods,
    generate,
    read_table,
    run_method,
)
from raystudy.algorithms.two_sample.batch import HARMONIC
from raystudy.studies.compositional_two_sample.analysis import (
    PVALUE_LEVELS,
    QQ_LEVELS,
    analyze,
    pvalue_cdf_key,
)
from raystudy.studies.compositional_two_sample.config import TwoSampleConfig, m_of, scenario
from raystudy.studies.compositional_two_sample.data import DATA_COMMANDS


# ----------------------------------------------------------------------------- data
def check_data(config: TwoSampleConfig) -> None:
    """file: open the table with the library's reader before Ray starts."""
    s = scenario(config)
    if s.family != "file":
        return
    try:
        read_table(s.path or "", s.group_column, s.groups)
    except FileNotFoundError as exc:
        raise MissingDataError(f"data.path={s.path}: {exc} (see docs/compositional_two_sample"
                               ".md; `raystudy data make-compositions` writes an example)"
                               ) from None
    except ValueError as exc:
        raise DataError(f"data.path={s.path}: {exc}") from None


def methods(config: TwoSampleConfig) -> tuple[str, ...]:
    """The harmonic studentizations, then the baselines that apply to the data."""
    applicable = default_methods(scenario(config).data)
    return (*(f"harmonic_{s}" for s in config.harmonic.studentize),
            *(b for b in config.baselines.methods if b in applicable))


def batch_seed(config: TwoSampleConfig, batch: int) -> int:
    """The seed of batch ``batch`` (1-based): mc.seed, the data configuration (so trials of
    different configurations never share draws) and the batch; not the harmonic options, so
    trials that differ only in degree or studentization see the same replicates."""
    d = config.data
    key = "|".join(map(str, (d.scenario, d.n, m_of(d), d.D, d.a, d.sigma, d.kappa, d.depth,
                             d.path, d.group_column, d.groups, config.mc.reps)))
    sequence = np.random.SeedSequence([config.mc.seed, zlib.crc32(key.encode()), batch])
    return int(sequence.generate_state(1)[0])


# ----------------------------------------------------------------------------- one batch
@dataclass(frozen=True)
class BatchPlan:
    """What every batch of a trial runs (picklable: it travels to ``ctx.map``'s tasks)."""

    scenario: Scenario
    reps: int
    methods: tuple[str, ...]
    degree: int
    distance: str
    alpha: float
    permutations: int


def plan_of(config: TwoSampleConfig) -> BatchPlan:
    return BatchPlan(scenario(config), config.mc.reps, methods(config),
                     config.harmonic.degree, config.harmonic.distance, config.mc.alpha,
                     config.baselines.permutations)


def method_seed(seed: int, method: str) -> int:
    """The seed of ``method``'s own randomness (its split or relabellings) in the batch of
    ``seed``: the library's rule (``run_batch``), so every method draws what it drew there."""
    state = np.random.SeedSequence([seed, 1 + METHODS.index(method)]).generate_state(1)
    return int(state[0])


def one_blas_thread() -> AbstractContextManager[Any]:
    """BLAS on one thread while a batch runs, as ``run_batch`` does (threadpoolctl; without
    it, OMP_NUM_THREADS and OPENBLAS_NUM_THREADS decide)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def pvalue_cdf(pvalues: np.ndarray, alpha: float) -> list[float]:
    """The fraction of replicates with p-value <= M alpha for each M of ``PVALUE_LEVELS``
    (a NaN p-value never counts, as it never rejects)."""
    p = np.where(np.isfinite(pvalues), pvalues, np.inf)
    return [float(np.mean(p <= multiple * alpha)) for multiple in PVALUE_LEVELS]


def monte_carlo_batch(plan: BatchPlan, seed: int) -> dict[str, Any]:
    """One batch, every method on the same replicates, step for step as the library's
    ``run_batch`` (the same data, method seeds and rejections), keeping each method's
    p-values as well: rejection rate, ms per test and the p-value CDF at
    ``PVALUE_LEVELS`` x alpha per method, and the harmonic tests' studentized statistics
    ``(reps,)``."""
    s = plan.scenario
    x, y = generate(s, plan.reps, np.random.default_rng(np.random.SeedSequence([seed, 0])))
    reject, time_ms, cdf, statistics = {}, {}, {}, {}
    with one_blas_thread():
        for method in plan.methods:
            start = time.perf_counter()
            res = run_method(method, x, y, seed=method_seed(seed, method), data=s.data,
                             degree=plan.degree, distance=plan.distance, alpha=plan.alpha,
                             permutations=plan.permutations)
            time_ms[method] = 1e3 * (time.perf_counter() - start) / plan.reps
            reject[method] = float(np.mean(np.asarray(res.reject, dtype=bool)))
            cdf[method] = pvalue_cdf(np.asarray(res.pvalue, dtype=np.float64), plan.alpha)
            if method in HARMONIC:
                statistics[method] = np.asarray(res.statistic, dtype=np.float64)
    return {"reject": reject, "time_ms": time_ms, "pvalue_cdf": cdf,
            "statistics": statistics}


# ----------------------------------------------------------------------------- metrics
def null_metrics(name: str, T: np.ndarray) -> dict[str, float]:
    """The null distribution of one harmonic statistic so far: KS distance to N(0, 1),
    moments and the quantiles of the report's QQ plot (non-finite values left out)."""
    from scipy import stats

    finite = T[np.isfinite(T)]
    out = {f"null/{name}/nonfinite": float(1 - finite.size / max(T.size, 1))}
    if finite.size < 2:
        return {**out, f"eval/ks/{name}": math.nan}
    out[f"eval/ks/{name}"] = float(stats.kstest(finite, "norm").statistic)
    out[f"null/{name}/mean"] = float(finite.mean())
    out[f"null/{name}/sd"] = float(finite.std(ddof=1))
    out[f"null/{name}/skew"] = float(stats.skew(finite))
    for level, q in zip(QQ_LEVELS, np.quantile(finite, QQ_LEVELS), strict=True):
        out[f"null/{name}/q{level:g}"] = float(q)
    return out


def batch_metrics(plan: BatchPlan, state: dict[str, Any], step: int) -> dict[str, float]:
    """This batch's rates, times and p-value CDFs (``batch/...``, the paired tests' units;
    the CDFs give the report its size-adjusted power), the trial's rates and times so far
    (``eval/...``) and, at a null, the statistics' distribution so far."""
    primary = plan.methods[0]
    out = {"mc/batch": float(step), "mc/replicates": float(step * plan.reps)}
    for method in plan.methods:
        rates, times = state["reject"][method], state["time_ms"][method]
        out[f"batch/reject/{method}"] = rates[-1]
        out[f"batch/time_ms/{method}"] = times[-1]
        out[f"eval/reject/{method}"] = float(np.mean(rates))
        out[f"eval/time_ms/{method}"] = float(np.mean(times))
        for multiple, fraction in zip(PVALUE_LEVELS, state["pvalue_cdf"][method][-1],
                                      strict=True):
            out[pvalue_cdf_key(method, multiple)] = fraction
    out["eval/reject"] = out[f"eval/reject/{primary}"]
    out["eval/time_ms"] = out[f"eval/time_ms/{primary}"]
    if plan.scenario.effect == 0:
        for name, T in state["statistics"].items():
            out.update(null_metrics(name, T))
        out["eval/ks"] = out[f"eval/ks/{primary}"]
    return out


# ----------------------------------------------------------------------------- loop
def train_loop(config: TwoSampleConfig, ctx: TrialContext) -> None:
    plan = plan_of(config)
    harmonic = [m for m in plan.methods if m in HARMONIC]
    cadence = ctx.cadence(config.mc.batches, 1, config.mc.checkpoint_every)
    state = ctx.load_checkpoint() or {
        "reject": {m: [] for m in plan.methods}, "time_ms": {m: [] for m in plan.methods},
        "statistics": {h: np.empty(0) for h in harmonic}}
    state.setdefault("pvalue_cdf", {m: [] for m in plan.methods})  # a checkpoint before it
    steps = list(cadence)
    run = functools.partial(monte_carlo_batch, plan)
    for first in range(0, len(steps), ctx.slots):  # one round of batches per map slot
        round_steps = steps[first:first + ctx.slots]
        outs = ctx.map(run, [batch_seed(config, step) for step in round_steps])
        for step, out in zip(round_steps, outs, strict=True):
            for method in plan.methods:
                state["reject"][method].append(out["reject"][method])
                state["time_ms"][method].append(out["time_ms"][method])
                state["pvalue_cdf"][method].append(out["pvalue_cdf"][method])
            if plan.scenario.effect == 0:  # the null statistics, for KS and the QQ plot
                for h in harmonic:
                    state["statistics"][h] = np.concatenate(
                        [state["statistics"][h], out["statistics"][h]])
            ctx.report(batch_metrics(plan, state, step),
                       checkpoint=state if cadence.checkpoints(step) else None, step=step)


# ----------------------------------------------------------------------------- study
STUDY = Study(
    name="compositional_two_sample",
    description=("Studentized spherical-harmonic two-sample test for compositions: size, "
                 "normality, power by Monte Carlo"),
    config_cls=TwoSampleConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/reject", "max", "rejection rate of the harmonic test (the first "
               "studentization) over the trial's batches: size at a null, power otherwise"),
        Metric("eval/time_ms", "min", "wall ms per test of that harmonic test"),
        Metric("eval/ks", "min", "null configurations: KS distance of its studentized "
               "statistic to N(0, 1)"),
    ),
    analyze=analyze,
    check_data=check_data,
    data_commands=DATA_COMMANDS,
)
