r"""One Monte Carlo batch: R replicates of a scenario, every method on the same replicates.

A batch is the unit of the study's paired comparisons (its rejection rates are one "seed"
of ``raystudy.algorithms.stats.paired_comparison``); a trial fans its batches out with
``ctx.map(functools.partial(run_batch, scenario, ...), seeds)``. Everything a batch draws
comes from ``seed``: the data from ``SeedSequence([seed, 0])``, method k's randomness (its
split or its relabellings) from ``SeedSequence([seed, 1 + k])`` with k its index in
:data:`METHODS`, so adding or dropping a method changes no other method's result.
Each method runs once on the whole batch, vectorised over the replicates; its time per
test is that wall time over R (BLAS limited to one thread, see :func:`run_batch`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np

from .directional import mean_direction_test
from .dirichlet import dirichlet_lrt_test
from .generators import Scenario, generate
from .harmonic_test import two_sample_test
from .kernel_baselines import (
    PERMUTATIONS,
    cross_mmd_test,
    energy_permutation_test,
    mmd_permutation_test,
)
from .logratio import cao_lin_li_test, hotelling_test, james_test
from .samples import TwoSampleResult

METHODS = ("harmonic_cross", "harmonic_full", "energy_perm", "mmd_perm", "cross_mmd",
           "hotelling_ilr", "james_ilr", "cao_lin_li", "dirichlet_lrt", "mean_direction")
"""Every method, in the fixed order that indexes their seeds."""
HARMONIC = ("harmonic_cross", "harmonic_full")
"""The proposed test's two studentizations; their statistics are kept."""
COMPOSITIONAL_ONLY = ("hotelling_ilr", "james_ilr", "cao_lin_li", "dirichlet_lrt")
DIRECTIONAL_ONLY = ("mean_direction",)


def default_methods(data: str) -> tuple[str, ...]:
    """The methods that apply to ``data`` ("compositional" or "directional")."""
    skip = DIRECTIONAL_ONLY if data == "compositional" else COMPOSITIONAL_ONLY
    return tuple(m for m in METHODS if m not in skip)


@dataclass(frozen=True)
class BatchResult:
    """Per-method outcomes of one batch of ``reps`` replicates."""

    scenario: Scenario
    reps: int
    seed: int
    reject: dict[str, np.ndarray]
    """Method -> ``(reps,)`` bool rejections at the batch's alpha."""
    time_ms: dict[str, float]
    """Method -> wall milliseconds per test (the method's batch time over ``reps``)."""
    statistics: dict[str, np.ndarray] = field(default_factory=dict)
    """Harmonic method -> ``(reps,)`` studentized statistics (N(0, 1) under H0 if valid)."""

    def rejection_rate(self) -> dict[str, float]:
        """Method -> fraction of replicates rejected."""
        return {k: float(np.mean(v)) for k, v in self.reject.items()}


def _method_seed(seed: int, method: str) -> int:
    state = np.random.SeedSequence([seed, 1 + METHODS.index(method)]).generate_state(1)
    return int(state[0])


def run_method(method: str, x: np.ndarray, y: np.ndarray, *, seed: int, data: str,
               degree: int = 10, distance: str = "chordal", alpha: float = 0.05,
               permutations: int = PERMUTATIONS) -> TwoSampleResult:
    """Run one method of :data:`METHODS` on a batch ``x`` ``(R, n, D)``, ``y`` ``(R, m, D)``."""
    if method in HARMONIC:
        return two_sample_test(x, y, seed=seed, degree=degree, studentize=method[9:],
                               distance=distance, alpha=alpha, data=data)
    if method == "energy_perm":
        return energy_permutation_test(x, y, permutations=permutations, seed=seed,
                                       alpha=alpha, data=data)
    if method == "mmd_perm":
        return mmd_permutation_test(x, y, permutations=permutations, seed=seed, alpha=alpha,
                                    data=data)
    if method == "cross_mmd":
        return cross_mmd_test(x, y, seed=seed, alpha=alpha, data=data)
    if method == "mean_direction":
        return mean_direction_test(x, y, alpha=alpha, data=data)
    if method in COMPOSITIONAL_ONLY and data != "compositional":
        raise ValueError(f"{method} needs compositional data, got {data} data.")
    tests = {"hotelling_ilr": hotelling_test, "james_ilr": james_test,
             "cao_lin_li": cao_lin_li_test, "dirichlet_lrt": dirichlet_lrt_test}
    if method not in tests:
        raise ValueError(f"unknown method {method!r}; choose from {METHODS}.")
    return tests[method](x, y, alpha=alpha)


def _one_blas_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # then OMP_NUM_THREADS / OPENBLAS_NUM_THREADS decide (Ray sets them)
        return nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def run_batch(scenario: Scenario, *, reps: int = 100, seed: int = 0,
              methods: Sequence[str] | None = None, degree: int = 10,
              distance: str = "chordal", alpha: float = 0.05,
              permutations: int = PERMUTATIONS) -> BatchResult:
    """``reps`` replicates of ``scenario``, every method on the same data (module docstring).

    Args:
        scenario: the data (``generators.Scenario``).
        reps: replicates R in the batch (default 100).
        seed: the batch's seed (module docstring).
        methods: names from :data:`METHODS` (default: all that apply to the scenario's data).
        degree, distance: the harmonic kernel's truncation and distance.
        alpha: level of every test (default 0.05).
        permutations: B of the permutation tests (default 199).

    Returns:
        :class:`BatchResult`. BLAS runs on one thread while the batch runs (threadpoolctl,
        when installed): the Gram products are small, and extra threads on a shared core
        cost far more than they save.
    """
    methods = default_methods(scenario.data) if methods is None else tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method {unknown[0]!r}; choose from {METHODS}.")
    x, y = generate(scenario, reps, np.random.default_rng(np.random.SeedSequence([seed, 0])))
    reject, time_ms, statistics = {}, {}, {}
    with _one_blas_thread():
        for method in methods:
            start = time.perf_counter()
            res = run_method(method, x, y, seed=_method_seed(seed, method), data=scenario.data,
                             degree=degree, distance=distance, alpha=alpha,
                             permutations=permutations)
            time_ms[method] = 1e3 * (time.perf_counter() - start) / reps
            reject[method] = np.asarray(res.reject, dtype=bool)
            if method in HARMONIC:
                statistics[method] = np.asarray(res.statistic, dtype=np.float64)
    return BatchResult(scenario, int(reps), int(seed), reject, time_ms, statistics)
