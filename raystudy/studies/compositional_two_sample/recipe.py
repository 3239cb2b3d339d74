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
* power above the log-ratio mean tests on same-mean alternatives (paired over batches);
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
per method is one unit of the paired tests) and checkpointed, so a resumed trial continues
at the next batch. ``analysis.py`` (beside this recipe) turns the batches into the tables,
figures and claims.
"""

from __future__ import annotations

import functools
import math
import zlib
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np

from raystudy import (
    DataError,
    Metric,
    MissingDataError,
    PositiveFloat,
    PositiveInt,
    Range,
    Study,
    TrialContext,
    parse_spec,
)
from raystudy.algorithms.two_sample import (
    FAMILIES,
    METHODS,
    Scenario,
    default_methods,
    read_table,
    run_batch,
)
from raystudy.algorithms.two_sample.batch import HARMONIC
from raystudy.studies.compositional_two_sample.analysis import QQ_LEVELS, analyze
from raystudy.studies.compositional_two_sample.make_data import DATA_COMMANDS

BASELINES = tuple(m for m in METHODS if m not in HARMONIC)
"""Every baseline of the library, in its seed order (baselines.methods' choices)."""
ZERO_DELTA = 0.65
"""The log-ratio baselines replace a zero by 0.65 x the smallest non-zero part (1 / depth
for counts) and scale the rest by 1 - k delta, so k zeros need k delta < 1
(raystudy.algorithms.two_sample.logratio)."""


# ----------------------------------------------------------------------------- config
@dataclass(frozen=True)
class DataConfig:
    scenario: str = "dirichlet"
    """family[/effect]: dirichlet, logistic_normal (nulls); concentration/E, mixture/E,
    shape/E (same mean), mean_shift/E, zeros/E, vmf/E (radians), file/E (E = 0: the null)."""
    n: Annotated[int, Range(ge=4)] = 50
    """Rows of x per replicate."""
    m_ratio: PositiveFloat = 1.0
    """Rows of y as a multiple of n: m = round(m_ratio * n) (at least 4)."""
    D: Annotated[int, Range(ge=2)] = 3
    """Parts of a composition (or the ambient dimension for vmf); file: read from the table."""
    a: PositiveFloat = 2.0
    """Dirichlet parameter per part of the base distribution (Dirichlet families, zeros)."""
    sigma: PositiveFloat = 0.5
    """Standard deviation of the ILR coordinates (logistic_normal, shape)."""
    kappa: PositiveFloat = 10.0
    """von Mises-Fisher concentration (vmf)."""
    depth: Annotated[int, Range(ge=2)] = 10
    """Counts per row before closing to proportions (zeros: exact zeros occur)."""
    path: str = ""
    """file: a local CSV/TSV of counts or proportions, one row per sample, a group column."""
    group_column: str = "group"
    """file: the column holding the group label."""
    groups: tuple[str, ...] = ()
    """file: the two groups to compare ('A,B'; empty: the file's only two)."""


@dataclass(frozen=True)
class HarmonicConfig:
    studentize: tuple[Literal["cross", "full"], ...] = ("cross", "full")
    """Studentizations run: cross (Shekhar-Kim-Ramdas split) | full (Chen-Qin); the first
    is the trial's eval/reject."""
    degree: Annotated[int, Range(ge=0)] = 10
    """Truncation L of the Gegenbauer expansion (0: the untruncated energy distance)."""
    distance: Literal["chordal", "geodesic"] = "chordal"
    """The energy distance on the sphere that the harmonics expand."""


@dataclass(frozen=True)
class BaselineConfig:
    methods: tuple[Literal[BASELINES], ...] = BASELINES  # type: ignore[valid-type]
    """Baselines run on the same replicates (those that do not apply to the data are
    skipped: log-ratio tests on vmf, mean_direction on compositions)."""
    permutations: PositiveInt = 99
    """B of the permutation energy and MMD tests (alpha (1 + B) an integer: exact)."""


@dataclass(frozen=True)
class MonteCarloConfig:
    batches: PositiveInt = 6
    """B: batches per trial, the units of the paired tests (6: the fewest an exact
    sign-flip test at 5 % can decide on)."""
    reps: PositiveInt = 100
    """R: replicates per batch (every method on each)."""
    alpha: Annotated[float, Range(gt=0, lt=0.5)] = 0.05
    """Level of every test."""
    seed: int = 0
    """Seed of the batches (with the data configuration and the batch index)."""
    checkpoint_every: Annotated[int, Range(ge=0)] = 1
    """Batches between checkpoints (0: only the last)."""


@dataclass(frozen=True)
class TwoSampleConfig:
    data: DataConfig = field(default_factory=DataConfig)
    harmonic: HarmonicConfig = field(default_factory=HarmonicConfig)
    baselines: BaselineConfig = field(default_factory=BaselineConfig)
    mc: MonteCarloConfig = field(default_factory=MonteCarloConfig)

    def validate(self) -> None:
        """Rules across fields (each field's own bounds and choices are declared on it)."""
        if not self.harmonic.studentize:
            raise ValueError("harmonic.studentize needs at least one of cross, full")
        if len(set(self.harmonic.studentize)) != len(self.harmonic.studentize):
            raise ValueError(f"harmonic.studentize={','.join(self.harmonic.studentize)} "
                             "names a studentization twice")
        if self.data.groups and len(self.data.groups) != 2:
            raise ValueError(f"data.groups={','.join(self.data.groups)}: name exactly two "
                             "groups (or none)")
        s = scenario(self)  # the family, its effect and the sizes, one sentence if wrong
        replaced = {"hotelling_ilr", "james_ilr", "cao_lin_li"} & set(self.baselines.methods)
        if s.family == "zeros" and replaced and self.data.depth <= ZERO_DELTA * (s.D - 1):
            raise ValueError(f"data.depth={self.data.depth} is too low for D={s.D}: the "
                             "log-ratio baselines' zero replacement needs depth > "
                             f"{ZERO_DELTA:g} (D - 1)")


# ----------------------------------------------------------------------------- data
def parse_scenario(text: str) -> tuple[str, float]:
    """``"mixture/0.3"`` -> ``("mixture", 0.3)``; a bare family is its null (effect 0)."""
    terms = parse_spec(text, "data.scenario")
    name, args = terms[0].name, terms[0].args
    if len(terms) > 1 or name not in FAMILIES or len(args) > 1 or (
            args and not isinstance(args[0], float)):
        raise ValueError(f"data.scenario={text!r}: expected family or family/effect with "
                         f"family one of {', '.join(FAMILIES)}")
    return name, float(args[0]) if args else 0.0


def m_of(data: DataConfig) -> int:
    """Rows of y (derived): round(m_ratio * n), at least 4."""
    return max(4, round(data.m_ratio * data.n))


def scenario(config: TwoSampleConfig) -> Scenario:
    """The library's Scenario of the trial (its ValueError is one sentence)."""
    family, effect = parse_scenario(config.data.scenario)
    d = config.data
    try:
        return Scenario(family, n=d.n, m=m_of(d), D=d.D, effect=effect, a=d.a, sigma=d.sigma,
                        kappa=d.kappa, depth=d.depth, path=d.path or None,
                        group_column=d.group_column,
                        groups=(d.groups[0], d.groups[1]) if d.groups else None)
    except ValueError as exc:
        raise ValueError(f"data.scenario={d.scenario}: {exc}") from None


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


def monte_carlo_batch(plan: BatchPlan, seed: int) -> dict[str, Any]:
    """One batch (``run_batch``): rejection rate and ms per test per method, and the
    harmonic tests' studentized statistics ``(reps,)``."""
    out = run_batch(plan.scenario, reps=plan.reps, seed=seed, methods=plan.methods,
                    degree=plan.degree, distance=plan.distance, alpha=plan.alpha,
                    permutations=plan.permutations)
    return {"reject": out.rejection_rate(), "time_ms": out.time_ms,
            "statistics": out.statistics}


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
    """This batch's rates and times (``batch/...``, the paired tests' units), the trial's
    so far (``eval/...``) and, at a null, the statistics' distribution so far."""
    primary = plan.methods[0]
    out = {"mc/batch": float(step), "mc/replicates": float(step * plan.reps)}
    for method in plan.methods:
        rates, times = state["reject"][method], state["time_ms"][method]
        out[f"batch/reject/{method}"] = rates[-1]
        out[f"batch/time_ms/{method}"] = times[-1]
        out[f"eval/reject/{method}"] = float(np.mean(rates))
        out[f"eval/time_ms/{method}"] = float(np.mean(times))
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
    steps = list(cadence)
    run = functools.partial(monte_carlo_batch, plan)
    for first in range(0, len(steps), ctx.slots):  # one round of batches per map slot
        round_steps = steps[first:first + ctx.slots]
        outs = ctx.map(run, [batch_seed(config, step) for step in round_steps])
        for step, out in zip(round_steps, outs, strict=True):
            for method in plan.methods:
                state["reject"][method].append(out["reject"][method])
                state["time_ms"][method].append(out["time_ms"][method])
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
