"""The spreadsheet_actions study's config: frozen dataclasses (their defaults are the quick
profile's) and the names of the in-trial conditions a trial can evaluate beside its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from raystudy import NonNegativeInt, PositiveFloat, PositiveInt, Range

PREDICTOR_NAMES = ("repeat", "fill_pattern", "ngram", "transformer", "oracle")
"""The predictor tiers (``raystudy.algorithms.spreadsheet.make_predictor``)."""
LEARNED = ("ngram", "transformer")
"""Predictors with a confidence, so with a ``threshold`` to abstain below."""
PROFILE_NAMES = ("row_major", "column_major", "data_then_format", "format_as_you_go")
TRIGGER_NAMES = ("always", "cheap", "every_n")
SEED_STRIDE = 10_000
"""Sheet seeds of one run seed span SEED_STRIDE values: test sheets first, training after."""
CONDITIONS = ("next_action", "no_abstain", "cheap", "k4")
"""What a trial evaluates beside its own setting, on the same sheets with the same fitted
predictor (so each claim's pair is inside one trial): ``next_action``, the exact-match
acceptance rule (N1); ``no_abstain``, threshold 0 (N2); ``cheap``, the cheap trigger (N3);
``k4``, four actions per suggestion."""


@dataclass(frozen=True)
class DataConfig:
    source: Literal["generated", "file"] = "generated"
    """generated (sheets and trajectories of raystudy's heuristic users) | file (test
    trajectories from data.path; training sheets stay generated)."""
    path: str = ""
    """file: a folder of ``*.txt`` trajectories, one ``KIND | TARGET | VALUE`` line per
    action (``raystudy data make-spreadsheets OUT`` writes one)."""
    profile: Literal[PROFILE_NAMES] = "row_major"  # type: ignore[valid-type]
    """The user profile of the test sheets (and of the training sheets, train_profile=same)."""
    train_profile: Literal["same", "all"] = "same"
    """same: training sheets made by the test profile's user | all: by every profile."""
    n_train: PositiveInt = 12
    """Training sheets (seeds disjoint from the test sheets')."""
    n_test: PositiveInt = 6
    """Test sheets, evaluated online."""
    n_rows: PositiveInt = 8
    """Data rows per sheet (a sheet has n_rows + 3 rows)."""
    n_cols: Annotated[int, Range(ge=2, le=702)] = 4
    """Columns per sheet, the label column included."""
    noise: Annotated[float, Range(ge=0.0, le=1.0)] = 0.1
    """Probability of swapping two neighbouring actions with disjoint targets."""


@dataclass(frozen=True)
class PredictorConfig:
    name: Literal[PREDICTOR_NAMES] = "ngram"  # type: ignore[valid-type]
    """repeat | fill_pattern | ngram | transformer | oracle (the upper bound)."""
    threshold: Annotated[float, Range(ge=0.0, le=1.0)] = 0.3
    """ngram, transformer: abstain when the top suggestion's probability is below it."""
    n: PositiveInt = 3
    """ngram: the order (back-off to shorter contexts)."""
    context: PositiveInt = 32
    """transformer: tokens of history the model sees."""
    contexts: tuple[int, ...] = (4, 8, 16)
    """transformer: further context lengths fitted and evaluated in the same trial (N4's
    slope); () for none."""
    d_model: PositiveInt = 64
    """transformer: width."""
    n_layers: PositiveInt = 2
    """transformer: layers."""
    n_heads: PositiveInt = 4
    """transformer: heads."""
    steps: NonNegativeInt = 300
    """transformer: AdamW steps."""
    batch_size: PositiveInt = 32
    """transformer: windows per step."""
    lr: PositiveFloat = 3e-3
    """transformer: learning rate."""


@dataclass(frozen=True)
class EvalConfig:
    trigger: Literal[TRIGGER_NAMES] = "always"  # type: ignore[valid-type]
    """When the predictor is called: always | cheap | every_n (raystudy's readings)."""
    every_n: PositiveInt = 2
    """trigger=every_n: call when the history's length is a multiple of it."""
    k: PositiveInt = 1
    """Actions per suggestion (1: NAPE's single-action mode)."""
    repredict: bool = True
    """After an accepted suggestion, ask again at once."""
    conditions: tuple[str, ...] = CONDITIONS
    """The in-trial conditions evaluated beside the trial's own setting."""
    sheets_per_report: PositiveInt = 3
    """Test sheets between reports (each report checkpoints the sheets done)."""
    check_xlsx: bool = True
    """Replay every test sheet through openpyxl and count cells that differ from the
    state model (the claims' gate)."""


@dataclass(frozen=True)
class RunConfig:
    seed: int = 0
    """Seed of the sheets (test sheet i: SEED_STRIDE seed + i; training sheet i: SEED_STRIDE
    seed + SEED_STRIDE / 2 + i, so disjoint) and of the transformer."""
    threads: PositiveInt = 1
    """torch threads per trial."""


@dataclass(frozen=True)
class SpreadsheetActionsConfig:
    data: DataConfig = field(default_factory=DataConfig)
    predictor: PredictorConfig = field(default_factory=PredictorConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def validate(self) -> None:
        unknown = sorted(set(self.eval.conditions) - set(CONDITIONS))
        if unknown:
            raise ValueError(f"eval.conditions: unknown {unknown}; choose from "
                             f"{', '.join(CONDITIONS)}")
        if min(self.predictor.contexts, default=1) < 1:
            raise ValueError(f"predictor.contexts must be positive, got "
                             f"{self.predictor.contexts}")
        if self.predictor.d_model % self.predictor.n_heads:
            raise ValueError(f"predictor.d_model ({self.predictor.d_model}) must be a "
                             f"multiple of predictor.n_heads ({self.predictor.n_heads})")
        if max(self.data.n_train, self.data.n_test) > SEED_STRIDE // 2:
            raise ValueError(f"data.n_train and data.n_test must be at most {SEED_STRIDE // 2} "
                             "(a run seed's test and training sheets are that far apart)")
