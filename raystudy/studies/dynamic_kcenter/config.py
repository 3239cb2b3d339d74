"""The dynamic_kcenter study's config: frozen dataclasses (their defaults are the quick
profile), the algorithms a trial can run, and the sizes derived from the config (in one
place: :func:`rows_of`, :func:`z_of`, :func:`outliers_of`, :func:`knobs_of`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from raystudy import Fraction, NonNegativeInt, PositiveFloat, PositiveInt, Range

ALGORITHMS = ("layered_reconstructed", "radius_guessing", "offline_recompute")
"""layered_reconstructed: raystudy's reconstruction of Huang et al.'s layered sampling from
the abstract (not the authors' algorithm); radius_guessing: the CLSW-style levels
d_min (1+eps)^i; offline_recompute: Charikar's greedy from scratch at every query."""
KINDS = ("twins", "blobs", "far_outliers", "file")
STREAMS = ("sliding_window", "random", "delete_centers")
FILE_HINT = " (write one with: raystudy data make-kcenter OUT)"


@dataclass(frozen=True)
class DataConfig:
    kind: Literal[KINDS] = "twins"  # type: ignore[valid-type]
    """twins (the same instance for every log10_delta, plus ~1 % near-duplicate partners at
    D_max / 10^a: Delta moves, OPT barely does) | blobs | far_outliers | file (a local CSV)."""
    d: PositiveInt = 2
    """Dimension of the generated points (file: the CSV's)."""
    log10_delta: Annotated[float, Range(ge=0.0, le=14.0)] = 6.0
    """twins, far_outliers: the targeted log10 of the aspect ratio Delta."""
    outliers: NonNegativeInt | None = None
    """Outliers the generator places among all rows; None: about problem.z per window
    (derived: round(z * rows / window))."""
    path: str = ""
    """file: the CSV (numeric columns, optional header, optional timestamp column)."""


@dataclass(frozen=True)
class StreamConfig:
    kind: Literal[STREAMS] = "sliding_window"  # type: ignore[valid-type]
    """sliding_window (insert the next row, delete the oldest) | random | delete_centers
    (an adaptive adversary deletes the first returned center: a stress test)."""
    window: Annotated[int, Range(ge=2)] = 2000
    """Rows inserted before the updates start (the live set's size, n)."""
    updates: PositiveInt = 4000
    """Updates after the window is full (the cadence's steps)."""


@dataclass(frozen=True)
class ProblemConfig:
    k: PositiveInt = 5
    """Number of centers."""
    z: NonNegativeInt = 20
    """Number of outliers the answer may discard (times 1 + eps for the dynamic structures)."""
    z_per_window: Annotated[float, Range(ge=0.0, lt=1.0)] = 0.0
    """When > 0, z = round(z_per_window * stream.window) instead of problem.z."""
    eps: PositiveFloat = 0.5
    """Outlier slack (floor((1 + eps) z) discarded) and RG's level ratio 1 + eps."""


@dataclass(frozen=True)
class AlgorithmConfig:
    name: Literal[ALGORITHMS] = "layered_reconstructed"  # type: ignore[valid-type]
    """layered_reconstructed | radius_guessing | offline_recompute."""
    sample_size: PositiveInt | None = None
    """layered: s, the sample per layer (None: ceil(4 k ln(k / delta)); an open choice)."""
    delta: Fraction = 0.1
    """layered: the failure probability in the default s (an open choice)."""
    beta: Fraction = 0.5
    """layered: the quantile of a layer's radius (an open choice)."""
    tau: PositiveInt | None = None
    """layered: the transition size (None: max(ceil(2 (1 + eps) z / eps), s); an open choice)."""
    delay: NonNegativeInt | None = None
    """layered: the update delay, an insertion buffer (None: min(ceil(eps z / 2),
    floor((1 + eps) z) - z); an open choice)."""
    rebuild_every: PositiveInt | None = None
    """layered: updates between rebuilds (None: n at the last build; an open choice)."""


@dataclass(frozen=True)
class EvalConfig:
    every: PositiveInt = 500
    """Updates between evaluations; each evaluation queries the structure once."""
    checkpoint_every: NonNegativeInt = 1
    """Evaluations between checkpoints (0: only the last)."""
    tiny_n: Annotated[int, Range(ge=0, le=40)] = 40
    """Points of the tiny instance (the newest live rows) solved exactly for
    eval/ratio_vs_opt (0: off)."""
    tiny_z: NonNegativeInt = 2
    """Outliers of the tiny instance."""
    offline_max_n: PositiveInt = 20_000
    """The offline greedy reference (O(n^2) memory) runs on snapshots up to this size;
    larger snapshots report no ratio_vs_offline."""


@dataclass(frozen=True)
class DynamicKCenterConfig:
    data: DataConfig = field(default_factory=DataConfig)
    stream: StreamConfig = field(default_factory=StreamConfig)
    problem: ProblemConfig = field(default_factory=ProblemConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    seed: int = 0
    """Seed of the instance (the same for every log10_delta), the stream and the structure."""

    def validate(self) -> None:
        from raystudy.algorithms.kcenter import LayeredSampling

        if self.data.kind == "file" and not self.data.path:
            raise ValueError(f"data.kind=file needs data.path, a local CSV{FILE_HINT}")
        if self.data.kind != "file":
            partners = max(1, round(rows_of(self.stream) / 100)) if self.data.kind == "twins" \
                else 0
            need = outliers_of(self) + self.problem.k + partners
            if rows_of(self.stream) < need:
                raise ValueError(f"the stream reads {rows_of(self.stream)} rows, fewer than the "
                                 f"{need} the generator needs (outliers + k"
                                 f"{' + partners' if partners else ''}); raise stream.window "
                                 "or lower data.outliers")
        try:
            LayeredSampling(self.problem.k, z_of(self), self.problem.eps, **knobs_of(self))
        except ValueError as err:
            raise ValueError(f"algorithm knobs: {err}") from None


def rows_of(stream: StreamConfig) -> int:
    """Rows a stream reads (derived): the window, then one new row every other update."""
    return stream.window + math.ceil(stream.updates / 2)


def z_of(config: DynamicKCenterConfig) -> int:
    """The problem's z (derived from problem.z_per_window when that is set)."""
    p = config.problem
    return round(p.z_per_window * config.stream.window) if p.z_per_window > 0 else p.z


def outliers_of(config: DynamicKCenterConfig) -> int:
    """Outliers the generator places (derived: about z per window unless data.outliers)."""
    if config.data.outliers is not None:
        return config.data.outliers
    return round(z_of(config) * rows_of(config.stream) / config.stream.window)


def knobs_of(config: DynamicKCenterConfig) -> dict[str, Any]:
    """The layered structure's open choices (``raystudy.algorithms.kcenter.layered.KNOBS``)."""
    a = config.algorithm
    return {"sample_size": a.sample_size, "delta": a.delta, "beta": a.beta, "tau": a.tau,
            "delay": a.delay, "rebuild_every": a.rebuild_every}
