"""The request: what a user asked for on the command line, its own values checked, and
the saved one read back for ``--resume``.

:class:`Request` is saved with the run as ``raystudy.json``. ``--resume`` reads it back
(:func:`load_resumed`: the run named with ``--name``, or the newest unfinished run of the
study under ``--storage``), so a resumed run goes on with the values it started with;
only its study, storage and name come from the new command line. :class:`Options` are
the command line's too (how to reach Ray, how long to wait, what to show) but belong to
one start and are not saved. :func:`validate_request` checks the request's own values,
before the study is even looked up.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raystudy.contract import storage
from raystudy.errors import ConfigError, UserError
from raystudy.platform.configuration.registry import is_study_file
from raystudy.platform.execution import preflight
from raystudy.platform.execution.trainable import Compute
from raystudy.platform.runs.results import REQUEST_FILE
from raystudy.platform.runs.rundir import find_resumable, run_location, trial_counts

SEARCHES = ("grid", "random", "optuna")
SCHEDULERS = ("fifo", "asha")


@dataclass
class Request:
    """Everything a user asked for on the command line, saved with the run."""

    kind: str  # "run" | "sweep"
    study: str
    profile: str = "quick"
    overrides: dict[str, str] = field(default_factory=dict)
    space: str | None = None
    search: str = "grid"
    scheduler: str = "fifo"
    samples: int = 1
    max_concurrent: int | None = None
    seed: int = 0
    compute: Compute = field(default_factory=Compute)
    storage: str = "runs"
    name: str | None = None
    trial_max_failures: int = 0
    in_process: bool = False  # the loop in the driver's own process, no Ray (`--in-process`)
    argv: list[str] = field(default_factory=list)  # the command line as typed (the report's)
    mlflow: str = ""  # "" off; "default": file:<storage root>/mlruns; or a tracking URI
    optuna_storage: str | None = None  # the dashboard database: None = <run_dir>/optuna.db
    # the profile + overrides as resolved when the run started (flat): --resume and the
    # report read it, so a profile edited later changes neither
    config: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Request:
        data = dict(data)
        data["compute"] = Compute(**data.get("compute", {}))
        if isinstance(data.get("mlflow"), bool):  # saved before --mlflow took a URI
            data["mlflow"] = "default" if data["mlflow"] else ""
        return cls(**data)

    def resume_command(self) -> str:
        return (f"raystudy {self.kind} {self.study} --resume --name {self.name} "
                f"--storage {shlex.quote(self.storage)}")


@dataclass
class Options:
    """How to reach Ray and show the run (the command line's, not the study's)."""

    address: str | None = None
    connect_timeout_s: float = 10.0
    placement_timeout_s: float = 120.0
    cluster_config: str | None = None
    verbose: bool = False


def validate_request(request: Request) -> None:
    """The request's own values: each a UserError of one line."""
    if request.search not in SEARCHES:
        raise UserError(f"unknown --search '{request.search}'; choose {', '.join(SEARCHES)}")
    if request.scheduler not in SCHEDULERS:
        raise UserError(
            f"unknown --scheduler '{request.scheduler}'; choose {', '.join(SCHEDULERS)}"
        )
    if request.samples < 1:
        raise UserError("--samples must be >= 1")
    if request.max_concurrent is not None and request.max_concurrent < 1:
        raise UserError("--max-concurrent must be >= 1")
    if request.trial_max_failures < 0:
        raise UserError("--trial-retries must be >= 0")
    c = request.compute
    if min(c.workers, c.cpus_per_worker, c.gpus_per_worker, c.map_tasks,
           c.cpus_per_map_task) < 0:
        raise UserError("--workers, --cpus-per-worker, --gpus-per-worker, --map-tasks and "
                        "--cpus-per-map-task must be >= 0")
    if c.workers and c.map_tasks:
        raise UserError("--map-tasks applies to trials without --workers (each Ray Train "
                        "worker is a process of its own, and they split the work by rank); "
                        "drop one of them")
    if request.name is not None:
        preflight.check_run_name(request.name)


def load_resumed(request: Request) -> Request:
    """The saved request of the run ``--resume`` continues (see the module
    docstring)."""
    if request.name:
        preflight.check_run_name(request.name)
        run: Path | str = run_location(request.storage, request.name)
    else:
        found = find_resumable(request.storage, request.study)
        if found is None:
            raise UserError(
                f"--resume: no unfinished {request.study} run under {request.storage}; "
                "name one with --name"
            )
        run = found
        counts = trial_counts(run)
        done = f" ({counts[0]} of {counts[1]} trials finished)" if counts else ""
        print(f"raystudy: resuming {run}{done}", flush=True)
    request_file = storage.join(str(run), REQUEST_FILE)
    if not storage.exists(request_file):
        raise UserError(f"--resume: {run} is not a raystudy run folder (no {REQUEST_FILE})")
    try:
        saved = Request.from_json(json.loads(storage.read_text(request_file)))
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"--resume: {request_file} is corrupt: {exc}") from None
    if not _same_study(saved.study, request.study):
        raise UserError(f"--resume: {run} is a {saved.study} run, not {request.study}")
    if request.in_process and not saved.in_process:
        raise UserError(f"--resume: {run} ran on Ray; resume it without --in-process")
    saved.study = request.study  # a study file may have moved (a job's working dir)
    saved.storage = request.storage
    saved.name = storage.name(run)
    return saved


def _same_study(saved: str, asked: str) -> bool:
    """Registered studies by name; study files by file name (the folder may differ)."""
    if is_study_file(saved) and is_study_file(asked):
        return Path(saved).name == Path(asked).name
    return saved == asked
