"""The empirical_gp study's config: its frozen dataclasses, the task families, their
defaults, the compared methods and the helpers its validation uses (imported by the recipe)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from raystudy import (
    Fraction,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Range,
    parse_spec,
)
from raystudy.algorithms.empirical_gp.baselines import BASELINES
from raystudy.algorithms.empirical_gp.corpora import FAMILIES
from raystudy.algorithms.empirical_gp.curve_models import CURVE_MODELS

FILE_FAMILIES = ("lcbench", "csv")
TASK_FAMILIES = (*FAMILIES, *FILE_FAMILIES)
# family: (grid points per curve, observation noise sd, where corpus datasets are observed)
DEFAULTS = {"gp": (50, 0.05, "uniform"), "curves": (52, 0.01, "prefix"),
            "seasonal": (96, 0.1, "subset"), "lcbench": (0, 0.0, "prefix"),
            "csv": (0, 0.0, "subset")}
COMPARED = ("base", "corpus_gp", *BASELINES, *CURVE_MODELS)
"""eval.baselines' choices: the base GP alone, the corpus-fitted GP, the per-task type-II ML
kernels and the per-task parametric learning-curve models."""
CURVE_FAMILIES = ("curves", "lcbench")
"""Families the parametric learning-curve models (pow3, log_power) are run on."""


@dataclass(frozen=True)
class TaskConfig:
    family: Literal[TASK_FAMILIES] = "curves"  # type: ignore[valid-type]
    """gp | curves | seasonal (generated) | lcbench | csv (local files at task.path)."""
    path: str = ""
    """lcbench: LCBench's JSON file or an LCBench-lite folder; csv: a folder of *.csv series."""
    dataset: str = ""
    """lcbench: one dataset of the file ('' = all datasets pooled)."""
    test_datasets: NonNegativeInt = 0
    """lcbench/csv: datasets held out whole for test curves (0: test curves come from every
    dataset; their configurations are never in the corpus either way)."""
    observed: Fraction = 0.25
    """Fraction of each test curve that is observed (the first points)."""
    horizons: tuple[PositiveInt, ...] = (1, 5, 10, 20)
    """Steps after the last observed point at which NLL/RMSE are reported ("1,5,10,20")."""
    test_tasks: PositiveInt = 30
    """Test curves per trial."""
    noise_sd: NonNegativeFloat = 0.0
    """Generated families: observation noise sd (0: gp 0.05, curves 0.01, seasonal 0.1)."""


@dataclass(frozen=True)
class CorpusConfig:
    datasets: PositiveInt = 200
    """S: corpus datasets the prior is learned from."""
    locations: Literal["auto", "prefix", "subset", "uniform"] = "auto"
    """prefix (first L points) | subset (random grid points) | uniform | auto (by family)."""
    min_points: PositiveInt = 10
    """Fewest observations per corpus dataset."""
    max_points: NonNegativeInt = 0
    """Most observations per corpus dataset (0: the curve length)."""
    beyond_pool: Literal["error", "cap"] = "error"
    """lcbench/csv, when S exceeds the curves left for the corpus: error | cap (S = the pool,
    with a warning). Curves are never drawn twice."""


@dataclass(frozen=True)
class ModelConfig:
    reference_points: Annotated[int, Range(ge=2)] = 26
    """M: reference points, evenly spaced on [0, 1]."""
    regularisation: str = "none"
    """none | inverse_wishart (MAP, mode at K(Z, Z)) | shrinkage/A (A in [0, 1])."""
    iterations: NonNegativeInt = 20
    """EM iterations."""
    base_lengthscale: PositiveFloat = 0.2
    """Base Matern-5/2 lengthscale on [0, 1] (outputscale, mean: the corpus variance, mean)."""
    base_fit: Literal["fixed", "corpus"] = "fixed"
    """fixed (the values above) | corpus (lengthscale, outputscale, mean and noise fitted from
    them by the corpus' summed marginal likelihood: the corpus_gp baseline's GP)."""
    corpus_fit_steps: PositiveInt = 50
    """L-BFGS iterations of the corpus marginal-likelihood fit (base_fit=corpus, corpus_gp)."""
    learn_noise: bool = True
    """Update the noise variance in closed form (else keep model.noise)."""
    noise: NonNegativeFloat = 0.0
    """(Initial) noise variance; 0: 1% of the corpus variance."""
    shards: PositiveInt = 2
    """E-step shards handed to ctx.map (Ray tasks with --map-tasks; in-process otherwise)."""


@dataclass(frozen=True)
class EvalConfig:
    baselines: tuple[Literal[COMPARED], ...] = (  # type: ignore[valid-type]
        "base", "corpus_gp", "rbf", "matern52", "spectral_mixture", "pow3", "log_power")
    """Comparison methods: base (the base GP alone), corpus_gp (one GP fitted on the whole
    corpus), per-task type-II ML kernels, per-task pow3/log_power curves (learning curves)."""
    baseline_steps: PositiveInt = 100
    """Adam steps of each per-task type-II ML fit."""
    examples: int = 3
    """Test curves kept (in the checkpoint) for the example-prediction figure."""


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 0
    """Seed of the corpus, the test curves and the LCBench split."""
    threads: PositiveInt = 1
    """torch CPU threads per trial."""


@dataclass(frozen=True)
class EmpiricalGPConfig:
    task: TaskConfig = field(default_factory=TaskConfig)
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def validate(self) -> None:
        """Rules across fields (each field's own bounds and choices are declared on it)."""
        t, c = self.task, self.corpus
        if t.family in FILE_FAMILIES and not t.path:
            raise ValueError(f"task.family={t.family} needs task.path (see docs/empirical_gp.md)")
        if not t.horizons:
            raise ValueError("task.horizons needs at least one horizon")
        length = DEFAULTS[t.family][0]
        if length and observed_points(self, length) + max(t.horizons) > length:
            raise ValueError(f"task.observed={t.observed} and task.horizons={t.horizons} "
                             f"reach past the {length} points of a {t.family} curve")
        if t.family in FILE_FAMILIES and c.locations == "uniform":
            raise ValueError("corpus.locations=uniform needs a generated family (files are "
                             "observed on their grid: prefix or subset)")
        if c.max_points and c.max_points < c.min_points:
            raise ValueError("corpus.max_points must be 0 or >= corpus.min_points")
        if t.test_datasets and (t.family not in FILE_FAMILIES or t.dataset):
            raise ValueError("task.test_datasets needs files of several datasets (task.family="
                             "lcbench or csv, task.dataset='')")
        regularisation(self.model.regularisation)


def regularisation(spec: str) -> tuple[str | None, float]:
    """``(prior, shrinkage)`` of none | inverse_wishart | shrinkage/A."""
    term, *more = parse_spec(spec, "model.regularisation")
    if not more and term.name in ("none", "inverse_wishart") and not term.args:
        return (None if term.name == "none" else term.name), 0.0
    if not more and term.name == "shrinkage" and len(term.args) == 1:
        (value,) = term.args
        if isinstance(value, float) and 0 <= value <= 1:
            return None, value
    raise ValueError(f"model.regularisation={spec!r}: expected none, inverse_wishart or "
                     "shrinkage/A with A in [0, 1]")


def methods(config: EmpiricalGPConfig) -> list[str]:
    """egp and the baselines that apply (pow3/log_power: learning-curve families only)."""
    return ["egp", *(b for b in config.eval.baselines
                     if b not in CURVE_MODELS or config.task.family in CURVE_FAMILIES)]


def observed_points(config: EmpiricalGPConfig, length: int) -> int:
    return max(1, round(config.task.observed * length))
