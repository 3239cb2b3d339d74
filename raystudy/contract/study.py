"""The contract between a study recipe and the platform.

A study gives the platform a config dataclass, a train loop, the metrics it reports
and an ``analyze`` hook; the platform owns Ray (session, Tuner, TorchTrainer,
checkpoints, results, reports). A study never calls ``ray.init`` or builds a Tuner.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    import torch

    from raystudy.contract.results import RunResults

T = TypeVar("T")
R = TypeVar("R")
C = TypeVar("C")
"""A study's config class: a frozen dataclass (hashable, so a loop may cache on it)."""


class Cadence(Protocol):
    """When a loop of ``total`` steps evaluates and checkpoints, and where it resumes.

    Steps count from 1. A step is an evaluation step every ``eval_every`` steps and at
    the last step; an evaluation checkpoints every ``checkpoint_every`` evaluations and at
    the last step. 0 means "only at the last step", for both. Iterating yields the steps
    still to do: after a resume, those after the last checkpoint.
    """

    @property
    def total(self) -> int: ...
    @property
    def start(self) -> int: ...
    def __iter__(self) -> Iterator[int]: ...
    def evaluates(self, step: int) -> bool: ...
    def checkpoints(self, step: int) -> bool: ...


class TrialContext(Protocol):
    """What a train loop sees, wherever it runs (in-process, a Tune trial, a Train worker).

    Loops use only this; the platform decides what is behind it.
    """

    rank: int
    world_size: int

    @property
    def slots(self) -> int:
        """How many ``map`` calls run at once (the trial's map slots; 1 without any)."""
    @property
    def is_main(self) -> bool: ...
    @property
    def device(self) -> torch.device: ...
    @property
    def node_id(self) -> str: ...
    def report(self, metrics: Mapping[str, Any], checkpoint: Mapping[str, Any] | None = None,
               step: int | None = None) -> None:
        """Namespaced metrics, an optional checkpoint state, and the cadence step they end
        (a checkpoint records it, so a resumed cadence starts after it)."""
    def load_checkpoint(self) -> dict[str, Any] | None: ...
    def cadence(self, total: int, eval_every: int = 0, checkpoint_every: int = 0) -> Cadence: ...
    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module: ...
    def dataset(self, name: str) -> Any: ...
    def all_reduce_mean(self, value: float) -> float: ...
    def all_reduce_sum(self, value: float) -> float: ...
    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]: ...
    def map_chunks(self, fn: Callable[[list[T]], list[R]], items: Iterable[T]) -> list[R]: ...


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


Verdict = Literal["supported", "contradicted", "inconclusive at this scale",
                  "precondition failed", "not run"]
"""A claim's verdict, the one vocabulary of every report (docs/usage.md shows each):

- ``supported``: the whole interval lies on the claimed side and the test's p reaches 0.05;
- ``contradicted``: the whole interval lies on the other side;
- ``inconclusive at this scale``: neither, or too few units (seeds, clusters) to say;
- ``precondition failed``: a comparison the run cannot read, because something that must
  hold first does not (a test that does not hold its size, an arm at chance);
- ``not run``: a regime the paper claims that this run did not cover (CUDA, the paper's
  scale, a real data set not placed).
"""
VERDICTS: tuple[Verdict, ...] = ("supported", "contradicted", "inconclusive at this scale",
                                 "precondition failed", "not run")


@dataclass(frozen=True)
class Precondition:
    """What must hold before a claim's comparison means anything, and whether it held.

    ``evidence`` is the measurement that decides it, in words with its numbers
    (``"size 0.089 at alpha 0.05 over 2,000 replicates"``).
    """

    statement: str
    holds: bool
    evidence: str

    def __post_init__(self) -> None:
        if not self.statement.strip() or not self.evidence.strip():
            raise ValueError("a Precondition states what must hold and the evidence for it")
        object.__setattr__(self, "holds", bool(self.holds))


@dataclass
class Claim:
    """A paper's claim tested on a run: the effect, its 95 % interval, n and the verdict.

    ``verdict`` is ``supported`` when the whole interval lies on the claimed side of 0,
    ``contradicted`` when it lies wholly on the other side, ``inconclusive at this scale``
    otherwise (and with too few seeds or clusters); ``precondition failed`` when any of
    ``preconditions`` does not hold (the effect and interval are still shown) and ``not
    run`` for a regime the run did not cover (see :data:`Verdict`). ``n`` counts the units
    of the test (seeds, or clusters such as datasets), not trials. ``scope`` says what the
    verdict holds for: the data (real, or a generated stand-in named as one) and the
    hardware and regime. The report shows every study's claims in one table, first (see
    ``raystudy.algorithms.stats`` for the tests and ``raystudy.claims`` for the helpers).
    """

    statement: str
    """The paper's claim, one sentence."""
    test: str
    """The test used, in words (paired sign-flip over seeds, clustered slope, ...)."""
    effect: str
    """What the effect size measures, with its sign convention."""
    effect_size: float
    ci_low: float
    ci_high: float
    n: int
    verdict: Verdict
    p_value: float | None = None
    note: str = ""
    """One line: what the reader should know (selection, units, why inconclusive)."""
    scope: str = field(kw_only=True)
    """What the verdict holds for: the data ("generated N-MNIST-format events from digits,
    not N-MNIST") and the hardware and regime ("CPU, 1 thread, batch 2"). Never empty."""
    preconditions: tuple[Precondition, ...] = field(default=(), kw_only=True)
    """What had to hold first, each with its evidence; any failing one makes the verdict
    ``precondition failed``."""

    def __post_init__(self) -> None:
        if not isinstance(self.scope, str) or not self.scope.strip():
            raise ValueError(f"claim {self.statement!r} has no scope: say what its verdict "
                             "holds for (the data, stand-in or real, and the hardware)")
        if self.verdict not in VERDICTS:
            raise ValueError(f"claim {self.statement!r}: verdict {self.verdict!r} is not one "
                             f"of {', '.join(VERDICTS)}")
        self.preconditions = tuple(self.preconditions)
        failed = [p.statement for p in self.preconditions if not p.holds]
        if failed and self.verdict != "precondition failed":
            raise ValueError(f"claim {self.statement!r} reads {self.verdict!r} although its "
                             f"precondition failed: {'; '.join(failed)}")
        if self.verdict == "precondition failed" and not failed:
            raise ValueError(f"claim {self.statement!r} reads 'precondition failed' but "
                             "names no failed precondition")

    @property
    def failed_preconditions(self) -> tuple[Precondition, ...]:
        return tuple(p for p in self.preconditions if not p.holds)


@dataclass
class Analysis:
    """What a study's ``analyze`` hook returns: claims, tables, figures and a summary dict."""

    tables: list[Table] = field(default_factory=list)
    figures: list[tuple[str, Path]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    """The paper's claims tested on this run; the report opens with them."""


@dataclass(frozen=True)
class DataCommand:
    """A ``raystudy data NAME ...`` command a study contributes (a generator of its data).

    ``add_arguments(parser)`` declares its flags on an argparse parser; ``run(args)`` does
    the work and returns the line printed after ``raystudy: `` (what it wrote, where).
    A ``UserError`` (``DataError``...) it raises is one line and exit code 2. Keep the
    module that defines both light to import (heavy imports inside ``run``): ``raystudy
    data`` reads every study's commands.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], str]


@dataclass(frozen=True)
class Study(Generic[C]):
    """One study over its config class ``C``: everything the platform needs to run, sweep
    and report it.

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
    ``data_commands`` are the ``raystudy data`` commands the study contributes (its data
    generators); a study package also names them ``DATA_COMMANDS`` in the module its
    entry point names, so ``raystudy data`` finds them without building every study.
    """

    name: str
    description: str
    config_cls: type[C]
    train_loop: Callable[[C, TrialContext], None]
    metrics: tuple[Metric, ...]
    analyze: Callable[[RunResults, Path], Analysis] | None = None
    datasets: Callable[[C], dict[str, Any]] | None = None
    check_data: Callable[[C], list[str] | None] | None = None
    memory_estimate: Callable[[C], tuple[int, str]] | None = None
    reuse_actors: bool = True
    supports_workers: bool = True
    data_commands: tuple[DataCommand, ...] = ()
    yaml_dir: Path | None = None
    """Folder with the study's ``profiles/`` and ``spaces/``; default: the folder of the
    module that defines ``train_loop`` (a study package, or a study file's folder)."""

    @property
    def primary(self) -> Metric:
        return self.metrics[0]

    @property
    def home(self) -> Path | None:
        """Where the study's profiles and spaces live (None when its module has no file)."""
        if self.yaml_dir is not None:
            return Path(self.yaml_dir)
        module = sys.modules.get(getattr(self.train_loop, "__module__", "") or "")
        file = getattr(module, "__file__", None)
        return Path(file).parent if file else None
