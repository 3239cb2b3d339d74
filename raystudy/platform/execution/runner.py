"""``raystudy run`` and ``raystudy sweep``: check the request, build the Tuner, run, report.

A run is a sweep of one trial, so both share one path: the same results layout,
checkpoints, divergence handling and resume. Everything a user can get wrong is
checked before any work starts, in this order: the request's own values, the study's
config and space, the study's data (on the driver, before Ray), the storage folder
(probe write, free space), the cluster address, and whether a trial can ever be placed.
Only then is the run folder created, with the request saved as ``raystudy.json``; a
start that fails before Tune wrote its experiment state removes the folder again.
Ctrl-C stops the sweep through Tune's own graceful stop (state saved, resumable),
prints the resume command and exits 130.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shlex
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raystudy.contract import storage
from raystudy.contract.data import check_writable, min_free_bytes
from raystudy.contract.study import Study
from raystudy.errors import ConfigError, DataError, Interrupted, MissingDataError, UserError
from raystudy.platform.configuration.config import load_config, profile_sweep_defaults, to_flat_dict
from raystudy.platform.configuration.registry import get_study, is_study_file
from raystudy.platform.configuration.spaces import build_param_space
from raystudy.platform.execution import preflight
from raystudy.platform.execution.finish import finish_run, mlflow_uri
from raystudy.platform.execution.progress import closing_line, driver_log
from raystudy.platform.execution.session import ray_session, resolve_address
from raystudy.platform.execution.trainable import Compute, make_trainable, resumable
from raystudy.platform.runs.results import REQUEST_FILE
from raystudy.platform.runs.rundir import (
    find_resumable,
    has_tune_state,
    remove_failed_start,
    run_location,
    trial_counts,
    write_json_atomic,
)
from raystudy.platform.tracking.optuna_store import open_storage, storage_url

SEARCHES = ("grid", "random", "optuna")
LOG_FILE = "logs/driver.log"
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


def _validate_request(request: Request) -> None:
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


def _search_alg(request: Request, study: Study, optuna_url: str | None):
    if request.search != "optuna":
        from ray.tune.search.basic_variant import BasicVariantGenerator

        # Tune ignores max_concurrent_trials (with a warning) when search_alg is a
        # generator like this one: the limit must be the generator's own.
        return BasicVariantGenerator(random_state=request.seed,
                                     max_concurrent=request.max_concurrent or 0)
    import optuna

    from raystudy.platform.tracking.optuna_mirror import RaystudyOptunaSearch

    return RaystudyOptunaSearch(  # the same storage and study as the dashboard mirror
        metric=study.primary.name,
        mode=study.primary.mode,
        sampler=optuna.samplers.TPESampler(seed=request.seed),
        storage=open_storage(optuna_url) if optuna_url else None,
        study_name=request.name,
    )


def _scheduler(request: Request, sweep_defaults: dict[str, Any]):
    if request.scheduler == "fifo":
        return None
    from raystudy.platform.tracking.optuna_mirror import PruningASHA

    asha = dict(sweep_defaults.get("asha") or {})
    return PruningASHA(
        time_attr="training_iteration",
        max_t=int(asha.get("max_t", 100)),
        grace_period=int(asha.get("grace_period", 1)),
        reduction_factor=float(asha.get("reduction_factor", 3)),
    )


SWEEP_KEYS = ("space", "asha", "max_concurrent")


def _apply_sweep_defaults(request: Request, sweep_defaults: dict[str, Any]) -> None:
    """A profile's ``sweep:`` section: its keys checked; its ``max_concurrent`` used where
    the command line gave none (a timing study runs its trials one at a time)."""
    unknown = set(sweep_defaults) - set(SWEEP_KEYS)
    if unknown:
        raise ConfigError(f"profile {request.profile}: unknown sweep key(s) "
                          f"{', '.join(sorted(unknown))}; expected {', '.join(SWEEP_KEYS)}")
    value = sweep_defaults.get("max_concurrent")
    if request.max_concurrent is None and value is not None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"profile {request.profile}: sweep.max_concurrent must be an "
                              f"integer >= 1, got {value!r}")
        request.max_concurrent = value


def _space_params(request: Request, study: Study, sweep_defaults: dict[str, Any]):
    from raystudy.platform.configuration.spaces import load_space

    if request.kind == "run":
        return {}
    return load_space(study, request.space or sweep_defaults.get("space", "default"))


def _tracking_callbacks(request: Request, study: Study, config: Any, params: dict[str, Any],
                        run_dir: Path, optuna_url: str | None) -> list[Any]:
    """The live Optuna study (optuna-dashboard) and, with --mlflow, MLflow."""
    callbacks: list[Any] = []
    if optuna_url:
        from raystudy.platform.configuration.spaces import optuna_distributions
        from raystudy.platform.tracking.optuna_mirror import OptunaMirror

        callbacks.append(OptunaMirror(
            optuna_url, request.name, study.primary.name, study.primary.mode,
            optuna_distributions(params, config), searcher_owned=request.search == "optuna"))
    uri = mlflow_uri(request)
    if uri is None:
        return callbacks
    from raystudy.platform.tracking import mlflow as tracking
    tracking.require_mlflow()
    return [*callbacks, tracking.callback(uri, study.name, request.name or "",
                                          to_flat_dict(config))]


def _new_run_name(request: Request, study: Study) -> str:
    return f"{study.name}-{request.kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def _check_data(study: Study, config: Any, on_cluster: bool) -> None:
    """The study's data check on the driver. Attached to a cluster, data that is missing
    here may live there: say so and go on; data that is here but wrong is an error."""
    if study.check_data is None:
        return
    try:
        notes = study.check_data(config) or []
    except MissingDataError as exc:
        if not on_cluster:
            raise
        notes = [f"{exc} -- not on this machine; the cluster must provide it"]
    for note in notes:
        print(f"raystudy: note: data not checked here: {note}", file=sys.stderr)


def _check_resources(study: Study, config: Any, compute: Compute,
                     capacity: preflight.Capacity, placement_timeout_s: float = 0.0) -> None:
    hint = (" (lower --workers/--cpus-per-worker/--gpus-per-worker/--map-tasks, or attach to "
            "a bigger cluster with --address)")
    waiting = preflight.check_placeable(compute.all_bundles(), capacity, hint)
    if not capacity.types_known:
        print(f"raystudy: note: the node types {capacity.where} can add are unknown (pass "
              "--cluster-config FILE to check against them); trials wait for nodes up to "
              f"{placement_timeout_s:g} s at a time", file=sys.stderr, flush=True)
    for line in waiting:
        print(f"raystudy: note: {line} now; waiting for the autoscaler to add one",
              file=sys.stderr, flush=True)
    if study.memory_estimate is not None and not compute.gpus_per_worker:  # host memory
        estimate, detail = study.memory_estimate(config)
        preflight.check_memory(estimate, capacity, detail)


@contextlib.contextmanager
def _graceful_interrupt() -> Iterator[dict[str, bool]]:
    """First Ctrl-C: Tune's own graceful stop (it saves the experiment state); its
    advice is silenced since we print the resume command ourselves. Second: stop now."""
    state = {"interrupted": False}
    if not _in_main_thread():
        yield state
        return

    def on_sigint(signum: int, frame: Any) -> None:
        tune_handler = signal.getsignal(signal.SIGUSR1)
        if state["interrupted"] or not callable(tune_handler):
            raise KeyboardInterrupt
        state["interrupted"] = True
        print("raystudy: stopping: saving the sweep's state (Ctrl-C again to quit now)",
              file=sys.stderr, flush=True)
        logging.getLogger("ray.tune").setLevel(logging.CRITICAL)
        tune_handler(signal.SIGUSR1, frame)  # sets Tune's "interrupted" event

    previous_env = os.environ.get("TUNE_DISABLE_SIGINT_HANDLER")
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, previous)
        if previous_env is None:
            os.environ.pop("TUNE_DISABLE_SIGINT_HANDLER", None)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


@dataclass
class Options:
    """How to reach Ray and show the run (the command line's, not the study's)."""

    address: str | None = None
    connect_timeout_s: float = 10.0
    placement_timeout_s: float = 120.0
    cluster_config: str | None = None
    verbose: bool = False


@dataclass
class Plan:
    """One run or sweep, from the request to the report: each step of ``execute`` is a
    method here, in the order it runs. Built by :meth:`validate` (everything a user can
    get wrong that needs no Ray), then filled in by the steps that follow."""

    request: Request
    resume: bool
    options: Options
    study: Study
    config: Any
    sweep_defaults: dict[str, Any]
    params: dict[str, Any]
    param_space: dict[str, Any]
    grid_size: int
    target: str | None
    """The cluster attached to (None: the embedded Ray)."""
    run: str = ""
    """The run folder: a local path or a URI on object storage."""
    root: str = ""
    optuna_url: str | None = None
    created: bool = False
    """This start created the run folder (so a failed start removes it)."""
    log_path: Path | None = None
    started: float = field(default_factory=time.time)

    @property
    def remote(self) -> bool:
        return storage.is_remote(self.run)

    @property
    def run_dir(self) -> Path:
        """The run folder where it is local."""
        return Path(self.run)

    @property
    def total(self) -> int:
        return self.grid_size * self.request.samples

    # ---------------------------------------------------------------- before Ray
    @classmethod
    def validate(cls, request: Request, resume: bool, options: Options) -> Plan:
        """The request's own values, the study, its config and space (every combination),
        and its data (on the driver): each a UserError of one line, before anything runs."""
        if resume:
            request = _load_resumed(request)
        _validate_request(request)
        study = get_study(request.study)
        config = load_config(study.config_cls, study, request.profile, request.overrides)
        sweep_defaults = profile_sweep_defaults(study, request.profile)
        _apply_sweep_defaults(request, sweep_defaults)
        params = _space_params(request, study, sweep_defaults)
        param_space, grid_size = build_param_space(params, config, request.search)
        if request.compute.workers and not study.supports_workers:
            raise UserError(f"study {study.name} does not support --workers")
        target = resolve_address(options.address)
        _check_data(study, config, on_cluster=target is not None)
        return cls(request, resume, options, study, config, sweep_defaults, params,
                   param_space, grid_size, target)

    def resolve_storage(self) -> None:
        """Name the run and check its folder: writable, new unless resumed, and the
        dashboard database reachable."""
        request = self.request
        request.name = request.name or _new_run_name(request, self.study)
        self.root = storage.root(request.storage)
        self.run = run_location(request.storage, request.name)
        if self.remote:  # first: a bucket, endpoint or key that is wrong is named as --storage
            storage.check_writable(self.root, "--storage")
        if not self.resume and storage.exists(storage.join(self.run, REQUEST_FILE)):
            raise UserError(f"run folder {self.run} exists; pass --resume or another --name")
        if not self.remote:
            check_writable(self.run_dir, "--storage")
        self.optuna_url = storage_url(request.optuna_storage, self.run_dir, not self.remote)
        if self.optuna_url and not self.optuna_url.startswith("sqlite"):
            open_storage(self.optuna_url).engine.dispose()  # unreachable: one line, now

    def probe_cluster(self) -> None:
        """The cluster answers (attached), or a trial fits on this machine (embedded)."""
        if self.target:
            preflight.probe_address(self.target, self.options.connect_timeout_s)
        else:
            _check_resources(self.study, self.config, self.request.compute,
                             preflight.local_capacity())

    # ---------------------------------------------------------------- in the session
    def check_cluster_resources(self) -> None:
        """Attached: a trial can be placed on the cluster's nodes (or the ones it can add)."""
        if self.target:
            _check_resources(self.study, self.config, self.request.compute,
                             preflight.cluster_capacity(self.target,
                                                        self.options.cluster_config),
                             self.options.placement_timeout_s)

    def create_folder(self) -> None:
        """The run folder with the request saved in it, as ``raystudy.json``."""
        if not self.remote:
            self.created = not self.run_dir.exists()
            self.run_dir.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self.run_dir / REQUEST_FILE, self.request.to_json())
        elif not self.resume:
            self.created = True
            storage.write_json(storage.join(self.run, REQUEST_FILE), self.request.to_json())

    def route_logs(self, log: Any, where: str) -> None:
        """The first lines (what runs where), then everything else into logs/driver.log."""
        print(f"raystudy: {self.request.kind} {self.study.name} ({self.total} trial(s)) on "
              f"{where}; results in {self.run}", flush=True)
        self.log_path = (self.run_dir if not self.remote else Path(tempfile.mkdtemp())) / LOG_FILE
        log.attach(self.log_path)
        _start_lines(self.run, self.log_path, self.remote, self.optuna_url)

    def callbacks(self) -> tuple[Any, list[Any]]:
        """The disk guard, the placement watch (attached) and the progress view."""
        from raystudy.platform.execution.progress_view import ProgressView

        view = ProgressView(self.total, self.study.primary.name, self.study.primary.mode)
        disk = _disk_guard(self.request, self.root)
        watch = (_placement_watch(self.request, self.options.placement_timeout_s)
                 if self.target else None)
        return disk, [c for c in (disk, watch, view) if c]

    def fit(self, tuner: Any) -> None:
        """Run the trials; the closing line; on object storage, the log uploaded."""
        try:
            tuner.fit()
            closing = closing_line(time.time() - self.started)
            if closing:
                print(closing, flush=True)
        finally:
            if self.remote and self.log_path is not None:
                _upload_log(self.log_path, storage.join(self.run, LOG_FILE))

    def clean_up_failed_start(self, exc: BaseException) -> None:
        """What a start that failed leaves: nothing, unless a trial ran (then resumable)."""
        if not self.created:
            return
        if isinstance(exc, KeyboardInterrupt):
            remove_failed_start(self.run)
        elif _placement_timeout(exc) is not None and not _any_report(self.run):
            storage.remove(self.run)  # no trial ever ran: nothing to resume
        elif not isinstance(exc, Interrupted):
            remove_failed_start(self.run)


def execute(request: Request, resume: bool = False, address: str | None = None,
            connect_timeout_s: float = 10.0, placement_timeout_s: float = 120.0,
            cluster_config: str | None = None, verbose: bool = False) -> Path | str:
    """Run (or resume) a run/sweep; returns the run folder (a path, or its URI on object
    storage) with its report.

    The terminal shows raystudy's lines and one progress view; everything Ray and Tune
    print goes to ``logs/driver.log`` in the run folder (and to the terminal too with
    ``verbose``).

    Attached to a cluster, trials that wait with no node able to hold them and none being
    added end the run after ``placement_timeout_s``; ``cluster_config`` (a launcher YAML)
    names the node types an autoscaler can add where the cluster does not say.
    """
    plan = Plan.validate(request, resume, Options(address, connect_timeout_s,
                                                  placement_timeout_s, cluster_config, verbose))
    if plan.request.in_process:
        from raystudy.platform.execution.inprocess import run_in_process

        return run_in_process(plan)
    plan.resolve_storage()
    plan.probe_cluster()
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", "1")  # a killed driver loses <= 1 s
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")  # every worker line into logs/driver.log
    # a report may leave the primary metric out (a timing block without the candidate it
    # names, another kind of trial in the same study): Tune's strict check would end the
    # sweep with a traceback; the report, the search and the Optuna mirror read what is there
    os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    # as it comes, none held back to be flushed on the terminal at shutdown
    try:
        with driver_log(verbose) as log, ray_session(address) as where, \
                _graceful_interrupt() as interrupt:
            plan.check_cluster_resources()
            plan.create_folder()
            plan.route_logs(log, where)
            disk, callbacks = plan.callbacks()
            plan.fit(_tuner(plan, callbacks))
            # measured again: on a resumed run Tune holds its own unpickled copy of the guard
            if disk is not None and disk.low():
                raise UserError(f"--storage {plan.root} is almost full (under "
                                f"{disk.min_free / 1024**2:.0f} MB free): the run stopped "
                                f"with its state saved; free space, then "
                                f"`{plan.request.resume_command()}`")
            if interrupt["interrupted"]:
                raise Interrupted(_progress(plan.run), plan.request.resume_command())
    except KeyboardInterrupt as exc:
        plan.clean_up_failed_start(exc)
        if has_tune_state(plan.run):
            raise Interrupted(_progress(plan.run), plan.request.resume_command()) from None
        raise Interrupted("interrupted before any trial started", "") from None
    except BaseException as exc:
        plan.clean_up_failed_start(exc)
        timeout = _placement_timeout(exc)
        if timeout is not None:
            raise timeout from None
        raise
    return finish_run(plan.request, plan.run, time.time() - plan.started)


def _upload_log(local: Path, remote_log: str) -> None:
    """The driver log onto the store, after what earlier legs of the run left there."""
    before = storage.read_text(remote_log) if storage.exists(remote_log) else ""
    storage.write_text(remote_log, before + local.read_text())


def _start_lines(run: str, log_path: Path, remote: bool, optuna_url: str | None) -> None:
    """Where things are: the log, the dashboard, TensorBoard on the run folder."""
    log = storage.join(run, LOG_FILE) if remote else log_path
    print(f"raystudy: full log (Ray, Tune): {log}", flush=True)
    if not remote:
        if optuna_url and optuna_url.startswith("sqlite"):
            print(f"raystudy: live dashboard: raystudy dashboard {run}", flush=True)
        print(f"raystudy: curves: tensorboard --logdir {run}", flush=True)


def _placement_watch(request: Request, timeout_s: float):
    from raystudy.platform.execution.placement import PlacementWatch

    return PlacementWatch(request.compute.all_bundles(), timeout_s)


def _placement_timeout(exc: BaseException) -> UserError | None:
    """The PlacementTimeout behind ``exc`` (Tune may wrap what a callback raised)."""
    from raystudy.platform.execution.placement import PlacementTimeout

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, PlacementTimeout):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _any_report(run: str) -> bool:
    """Whether any trial of the run reported a result (locally or on object storage)."""
    if not storage.exists(run):
        return False
    for trial in storage.list_dirs(run):
        result = storage.join(run, trial, "result.json")
        if storage.exists(result) and storage.read_text(result).strip():
            return True
    return False


def _disk_guard(request: Request, root: str):
    if storage.is_remote(root):
        return None
    from raystudy.platform.execution.disk_guard import DiskSpaceGuard

    return DiskSpaceGuard(root, min_free_bytes())


def _progress(run: Path | str) -> str:
    counts = trial_counts(run)
    return f"interrupted ({counts[0]} of {counts[1]} trials finished)" if counts else (
        "interrupted")


def _tuner(plan: Plan, callbacks: list[Any]):
    """The Tuner of the plan: restored from the run folder, or new."""
    from ray import tune

    from raystudy.platform.configuration.registry import ship_study_files

    ship_study_files()
    request, study, run = plan.request, plan.study, plan.run
    trainable = tune.with_resources(
        resumable(make_trainable(study, plan.config, request.compute,
                                 storage.join(run, "train"))),
        request.compute.resources(),
    )
    # Tune parses a URI's query itself (pyarrow's from_uri; ray.air's URI keeps it on
    # parent/child paths), so storage_path and the restore path stay URIs.
    resume = plan.resume
    if resume and not _can_restore(run):
        print("raystudy: no Tune state saved yet in that folder; starting it afresh")
        resume = False
    if resume:
        try:
            return tune.Tuner.restore(run, trainable=trainable,
                                      resume_unfinished=True, resume_errored=False)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise DataError(f"--resume: cannot restore {run}: its Tune state is "
                            f"unreadable ({first[:200]})") from None
    return tune.Tuner(
        trainable,
        param_space=plan.param_space,
        tune_config=tune.TuneConfig(
            metric=study.primary.name,
            mode=study.primary.mode,
            search_alg=_search_alg(request, study, plan.optuna_url),
            scheduler=_scheduler(request, plan.sweep_defaults),
            num_samples=request.samples,
            max_concurrent_trials=request.max_concurrent if request.search == "optuna" else None,
            reuse_actors=study.reuse_actors and request.compute.workers == 0,
        ),
        run_config=tune.RunConfig(
            name=request.name,
            storage_path=plan.root,
            failure_config=tune.FailureConfig(
                max_failures=request.trial_max_failures, fail_fast=False
            ),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
            callbacks=[*_tracking_callbacks(request, study, plan.config, plan.params,
                                            plan.run_dir, plan.optuna_url), *callbacks],
        ),
    )


def _can_restore(run: str) -> bool:
    """Tune's ``can_restore``; a store that cannot be read is one line."""
    from ray import tune

    try:
        return tune.Tuner.can_restore(run)
    except (OSError, ValueError) as exc:
        raise UserError(f"--resume: cannot read {run}: {str(exc).splitlines()[0]}") from None


def _same_study(saved: str, asked: str) -> bool:
    """Registered studies by name; study files by file name (the folder may differ)."""
    if is_study_file(saved) and is_study_file(asked):
        return Path(saved).name == Path(asked).name
    return saved == asked


def _load_resumed(request: Request) -> Request:
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
