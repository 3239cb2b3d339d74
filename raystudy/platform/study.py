"""The contract between a study recipe and the platform.

A study gives the platform a config dataclass, a train loop, the metrics it reports
and an ``analyze`` hook; the platform owns Ray (session, Tuner, TorchTrainer,
checkpoints, results, reports). A study never calls ``ray.init`` or builds a Tuner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from raystudy.platform.context import TrialContext
    from raystudy.platform.results import RunResults


@dataclass(frozen=True)
class Metric:
    """A reported metric: namespaced key (``eval/loss``), direction, one-line meaning."""

    name: str
    mode: Literal["min", "max"]
    description: str = ""


@dataclass
class Table:
    """A titled table for the report: column names and rows of plain values."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""


@dataclass
class Analysis:
    """What a study's ``analyze`` hook returns: tables, figure files and a summary dict."""

    tables: list[Table] = field(default_factory=list)
    figures: list[tuple[str, Path]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Study:
    """One study: everything the platform needs to run, sweep and report it.

    ``train_loop(config, ctx)`` runs one trial; it calls ``ctx.report`` with namespaced
    metrics (the same values on every rank) and may pass a checkpoint state dict.
    ``metrics[0]`` is the primary metric, used by schedulers and searchers.
    ``datasets(config)`` optionally returns Ray Datasets the loop reads with
    ``ctx.dataset(name)``; ``analyze(results, figures_dir)`` builds the report's study part.
    ``check_data(config)`` runs on the driver before Ray starts: it opens the local data
    with its reader and checks what the loop relies on (format, keys, dtype, shape against
    the config, value ranges), cheaply, raising ``DataError`` naming the file and what was
    expected (``MissingDataError`` for data that is not here: attached to a cluster, that
    becomes a note, since the data may live there). It may return notes on what it could
    not check from here (object storage, say), which the platform prints.
    ``memory_estimate(config)`` returns ``(bytes, detail)``: a trial's peak memory, so a
    typo such as a huge batch size is refused before it can take a node down.
    """

    name: str
    description: str
    config_cls: type
    train_loop: Callable[[Any, TrialContext], None]
    metrics: tuple[Metric, ...]
    analyze: Callable[[RunResults, Path], Analysis] | None = None
    datasets: Callable[[Any], dict[str, Any]] | None = None
    check_data: Callable[[Any], list[str] | None] | None = None
    memory_estimate: Callable[[Any], tuple[int, str]] | None = None
    reuse_actors: bool = True
    supports_workers: bool = True

    @property
    def primary(self) -> Metric:
        return self.metrics[0]
