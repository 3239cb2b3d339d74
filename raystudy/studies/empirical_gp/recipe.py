"""Do GP priors learned from a corpus of datasets extrapolate better? (Empirical GP study)

Paper: Lin, Ament, Tiao, Eriksson, Balandat, Bakshy, "Empirical Gaussian Processes"
(arXiv 2602.12082, ICML 2026). Claim: a prior mean and covariance estimated by EM from
many past datasets (learning curves, time series) predicts a new task's future better
-- lower test NLL and RMSE at long horizons -- than hand-picked kernels fitted to the
task alone, and improves with the size of the corpus.

Launch::

    raystudy sweep empirical_gp --profile quick                  # 2 CPUs, minutes
    raystudy sweep empirical_gp --profile paper --set task.path=/data/lcbench/data_2k.json \\
        --map-tasks 4                                            # E-step shards as Ray tasks

Each trial draws (or loads) a corpus of S datasets and a set of test curves, fits the
empirical prior on M reference points with ``em_fit`` (its E-step split into
``model.shards`` shards through ``ctx.map``), then observes the first part of each test
curve and predicts the rest with the empirical GP, the base GP, a GP fitted once on the
whole corpus by its summed marginal likelihood (``corpus_gp``), RBF, Matern-5/2 and
spectral-mixture GPs fitted per task by type-II ML, and (learning curves) pow3 and
log-power curves fitted per task by least squares. Test curves from files have
configurations no corpus curve has (``task.test_datasets``: datasets too). It reports
NLL and RMSE per horizon (steps after the last observed point) and overall, and
checkpoints the learned prior and a few example predictions for the report's figures
(``analysis.py``, beside this recipe).
"""

from __future__ import annotations

import functools
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gpytorch
import numpy as np
import torch

from raystudy import Metric, Study, TrialContext
from raystudy.algorithms.empirical_gp import base_prior, em_fit
from raystudy.algorithms.empirical_gp.baselines import fit_and_predict
from raystudy.algorithms.empirical_gp.corpora import (
    FAMILIES,
    CorpusSpec,
    corpus,
    sample_locations,
    tasks,
)
from raystudy.algorithms.empirical_gp.corpus_gp import fit_corpus_gp
from raystudy.algorithms.empirical_gp.curve_models import CURVE_MODELS, fit_and_extrapolate
from raystudy.algorithms.empirical_gp.loaders import (
    Table,
    holdout_split,
    load_csv_folder,
    load_curve_table,
)
from raystudy.algorithms.empirical_gp.modules import fit_predict
from raystudy.errors import DataError, MissingDataError
from raystudy.studies.empirical_gp.analysis import analyze
from raystudy.studies.empirical_gp.config import (
    DEFAULTS,
    FILE_FAMILIES,
    EmpiricalGPConfig,
    methods,
    observed_points,
    regularisation,
)


# ----------------------------------------------------------------------------- data
@functools.lru_cache(maxsize=2)
def file_table(family: str, path: str, dataset: str) -> Table:
    """Config ids and curves per dataset from local files, cut to the common length;
    LCBench accuracies in percent become fractions."""
    table = ({name: ([name], curves) for name, curves in load_csv_folder(path).items()}
             if family == "csv" else load_curve_table(path))
    if dataset:
        if dataset not in table:
            raise DataError(f"task.path={path}: no dataset {dataset!r} (it has "
                            f"{', '.join(sorted(table)[:8])})")
        table = {dataset: table[dataset]}
    length = min(c.shape[1] for _, c in table.values())  # CSV series: the common length
    percent = family == "lcbench" and max(c.max() for _, c in table.values()) > 1.5
    return {name: (ids, c[:, :length] / (100.0 if percent else 1.0))
            for name, (ids, c) in table.items()}


def split_files(config: EmpiricalGPConfig, rng: np.random.Generator):
    """Held-out test curves and the corpus rows (S of the pool, never drawn twice)."""
    t, S = config.task, config.corpus.datasets
    split = holdout_split(file_table(t.family, t.path, t.dataset), t.test_tasks,
                          t.test_datasets, rng)
    if S > len(split.pool):
        message = (f"task.path={t.path}: corpus.datasets={S} exceeds the {len(split.pool)} "
                   f"curves left for the corpus after holding out the test configurations")
        if config.corpus.beyond_pool == "error":
            raise DataError(f"{message}; lower corpus.datasets or set corpus.beyond_pool=cap")
        warnings.warn(f"{message}; corpus capped at {len(split.pool)} curves "
                      "(corpus.beyond_pool=cap)", stacklevel=2)
    return split, split.pool[:S]


def check_data(config: EmpiricalGPConfig) -> None:
    """Open the local files (LCBench or CSV) and check they hold enough long-enough curves."""
    if config.task.family not in FILE_FAMILIES:
        return
    if not Path(config.task.path).exists():
        expected = ("LCBench's data_2k.json or an LCBench-lite folder "
                    "(<dataset>/metrics.parquet.gzip)" if config.task.family == "lcbench"
                    else "a folder of *.csv series")
        raise MissingDataError(f"task.path={config.task.path}: no such file or folder; "
                        f"task.family={config.task.family} expects {expected} there "
                        "(see docs/empirical_gp.md)")
    table = file_table(config.task.family, config.task.path, config.task.dataset)
    length, count = next(iter(table.values()))[1].shape[1], sum(len(i) for i, _ in table.values())
    k = observed_points(config, length)
    if k + max(config.task.horizons) > length:
        raise DataError(f"task.path={config.task.path}: curves of {length} points are "
                        f"too short for {k} observed + horizon {max(config.task.horizons)}")
    if count < config.task.test_tasks + 2:
        raise DataError(f"task.path={config.task.path}: {count} curves, need more "
                        f"than task.test_tasks + 1 = {config.task.test_tasks + 1}")
    split_files(config, np.random.default_rng(config.train.seed))


@dataclass
class Problem:
    """A corpus, test curves Y (tasks, T) on grid (T,), their truth on Z if known."""

    datasets: list
    grid: np.ndarray
    Y: np.ndarray
    truth: tuple[np.ndarray, np.ndarray] | None


def build_problem(config: EmpiricalGPConfig, Z: np.ndarray) -> Problem:
    t, c, seed = config.task, config.corpus, config.train.seed
    length, noise_sd, locations = DEFAULTS[t.family]
    locations = locations if c.locations == "auto" else c.locations
    if t.family in FAMILIES:
        family = FAMILIES[t.family]()
        grid = np.linspace(0, 1, length)
        noise_sd = t.noise_sd or noise_sd
        spec = CorpusSpec(locations, c.min_points, c.max_points or length, noise_sd, grid)
        Y, _ = tasks(family, grid, t.test_tasks, noise_sd, seed=10_000 + seed)
        return Problem(corpus(family, spec, c.datasets, seed), grid, Y, family.moments(Z))
    rng = np.random.default_rng(seed)
    split, rows = split_files(config, rng)
    Y = split.test
    grid = np.linspace(0, 1, Y.shape[1])
    spec = CorpusSpec(locations, c.min_points, c.max_points or len(grid), 0.0, grid)
    xs = [np.searchsorted(grid, x) for x in sample_locations(rng, spec, len(rows))]
    datasets = [(torch.as_tensor(grid[i]).unsqueeze(-1), torch.as_tensor(row[i]))
                for i, row in zip(xs, rows, strict=True)]
    return Problem(datasets, grid, Y, None)


# ----------------------------------------------------------------------------- model
def base_modules(datasets: list, lengthscale: float, dtype: torch.dtype):
    """Matern-5/2 base kernel and constant mean set to the corpus' variance and mean."""
    y = torch.cat([d[1] for d in datasets])
    kernel = gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(nu=2.5)).to(dtype)
    kernel.base_kernel.lengthscale = lengthscale
    kernel.outputscale = float(y.var())
    mean = gpytorch.means.ConstantMean().to(dtype)
    mean.constant = float(y.mean())
    return kernel, mean, float(y.var())


def predictive_nll(y: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Gaussian negative log predictive density per point."""
    var = np.maximum(var, 1e-12)
    return 0.5 * (np.log(2 * np.pi * var) + (y - mean) ** 2 / var)


_BASELINE_CACHE: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
"""Per-task baseline predictions per process, keyed by the method, the frozen task config,
the observed points, the seed and the fit steps: all they depend on."""


def evaluate(config: EmpiricalGPConfig, problem: Problem, priors: dict) -> dict[str, Any]:
    """Predictive (mean, variance) of y at every future point of every test curve, per method.

    ``priors`` holds the corpus-based priors (egp, base, corpus_gp), each conditioned on a
    test curve's observed points. The per-task kernels are fitted as one batch of independent
    GPs (the test curves share their grid) and, like the per-task curve models, cached per
    process: they depend on neither the corpus nor the prior.
    """
    grid = torch.as_tensor(problem.grid).unsqueeze(-1)
    k = observed_points(config, len(problem.grid))
    Y = torch.as_tensor(problem.Y)
    out: dict[str, Any] = {}
    for method in methods(config):
        if method in priors:
            posts = [fit_predict(priors[method], grid[:k], row[:k], grid[k:], include_noise=True)
                     for row in Y]
            out[method] = (np.stack([p.mean.numpy() for p in posts]),
                           np.stack([p.variance.numpy() for p in posts]))
            continue
        key = (method, config.task, k, config.train.seed, config.eval.baseline_steps)
        if key not in _BASELINE_CACHE:
            if method in CURVE_MODELS:   # epochs t = 1..T on the grid
                t = 1 + problem.grid * (len(problem.grid) - 1)
                _BASELINE_CACHE[key] = fit_and_extrapolate(method, t[:k], problem.Y[:, :k], t[k:])
            else:
                mean, var = fit_and_predict(method, grid[:k], Y[:, :k], grid[k:],
                                            steps=config.eval.baseline_steps)
                _BASELINE_CACHE[key] = (mean.numpy(), var.numpy())
        out[method] = _BASELINE_CACHE[key]
    return out


def metrics_of(config: EmpiricalGPConfig, problem: Problem, preds: dict) -> dict[str, float]:
    k = observed_points(config, len(problem.grid))
    future = problem.Y[:, k:]
    out = {}
    for method, (mean, var) in preds.items():
        nll, se = predictive_nll(future, mean, var), (future - mean) ** 2
        out[f"eval/{method}/nll"] = float(nll.mean())
        out[f"eval/{method}/rmse"] = float(np.sqrt(se.mean()))
        for h in config.task.horizons:
            out[f"eval/{method}/nll_h{h}"] = float(nll[:, h - 1].mean())
            out[f"eval/{method}/rmse_h{h}"] = float(np.sqrt(se[:, h - 1].mean()))
    return out


# ----------------------------------------------------------------------------- loop
def train_loop(config: EmpiricalGPConfig, ctx: TrialContext) -> None:
    torch.set_num_threads(config.train.threads)
    torch.manual_seed(config.train.seed)
    m = config.model
    Z = np.linspace(0, 1, m.reference_points)
    problem = build_problem(config, Z)
    kernel, mean, variance = base_modules(problem.datasets, m.base_lengthscale, torch.float64)
    noise = m.noise or 0.01 * variance
    prior_kind, shrinkage = regularisation(m.regularisation)
    n_obs = sum(len(y) for _, y in problem.datasets)
    fitted, fit_metrics = None, {}
    if m.base_fit == "corpus" or "corpus_gp" in methods(config):
        started = time.perf_counter()
        fitted = fit_corpus_gp(problem.datasets, kernel, mean, noise, steps=m.corpus_fit_steps)
        fit_metrics = {"train/corpus_gp/lengthscale": float(fitted.kernel.base_kernel.lengthscale),
                       "train/corpus_gp/outputscale": float(fitted.kernel.outputscale),
                       "train/corpus_gp/noise": fitted.noise,
                       "train/corpus_gp/log_likelihood": fitted.log_likelihood / n_obs,
                       "train/corpus_gp/seconds": time.perf_counter() - started}
    if m.base_fit == "corpus":
        assert fitted is not None  # fitted just above for base_fit=corpus
        kernel, mean, noise = fitted.kernel, fitted.mean, fitted.noise

    started = time.perf_counter()
    prior = em_fit(problem.datasets, torch.as_tensor(Z).unsqueeze(-1), kernel, mean, noise=noise,
                   iterations=m.iterations, learn_noise=m.learn_noise, prior=prior_kind,
                   shrinkage=shrinkage, map_fn=ctx.map if ctx.slots > 1 else None,
                   shards=m.shards)
    em_seconds = time.perf_counter() - started
    priors = {"egp": prior, "base": base_prior(prior.reference_points, kernel, mean,
                                               noise=prior.noise)}
    if fitted is not None:
        priors["corpus_gp"] = base_prior(prior.reference_points, fitted.kernel, fitted.mean,
                                         noise=fitted.noise)
    preds = evaluate(config, problem, priors)
    metrics = metrics_of(config, problem, preds)
    state = {"Z": Z, "mean": prior.mean.numpy(), "covariance": prior.covariance.numpy(),
             "noise": prior.noise, "grid": problem.grid,
             "log_likelihoods": [prior.initial_log_likelihood, *prior.log_likelihoods],
             "observed": observed_points(config, len(problem.grid)),
             "examples": {"Y": problem.Y[: config.eval.examples],
                          **{k: (v[0][: config.eval.examples], v[1][: config.eval.examples])
                             for k, v in preds.items()}}}
    if problem.truth is not None:
        true_mean, true_cov = problem.truth
        state["truth"] = (true_mean, true_cov)
        metrics["task/covariance_error"] = float(
            np.linalg.norm(state["covariance"] - true_cov) / np.linalg.norm(true_cov))
        metrics["task/mean_error"] = float(np.sqrt(np.mean((state["mean"] - true_mean) ** 2)))
    ll = prior.log_likelihoods[-1] if prior.log_likelihoods else prior.initial_log_likelihood
    ctx.report({"eval/nll": metrics["eval/egp/nll"], "eval/rmse": metrics["eval/egp/rmse"],
                **metrics, "train/log_likelihood": ll / n_obs, "train/noise": prior.noise,
                "train/em_seconds": em_seconds, "train/iterations": len(prior.log_likelihoods),
                "train/corpus_observations": n_obs, "train/corpus_datasets": len(problem.datasets),
                **fit_metrics}, checkpoint=state)


# ----------------------------------------------------------------------------- report
STUDY = Study(
    name="empirical_gp",
    description="GP priors learned by EM from a corpus vs per-task kernels (Empirical GPs)",
    config_cls=EmpiricalGPConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/nll", "min", "empirical GP test NLL per future point"),
        Metric("eval/rmse", "min", "empirical GP test RMSE over future points"),
        Metric("train/log_likelihood", "max", "corpus marginal log-likelihood per observation"),
    ),
    analyze=analyze,
    check_data=check_data,
)
