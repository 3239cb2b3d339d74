"""The plan of one run or sweep: the steps ``runner.execute`` takes, as methods, in order.

Before Ray (:meth:`Plan.validate`, :meth:`Plan.resolve_storage`,
:meth:`Plan.probe_cluster`): the request's own values, the study, its config, the
profile's ``sweep:`` section and the space (every combination), the study's data on the
driver; the run's name and folder (writable, new unless resumed) and the dashboard
database; the cluster answering, or a trial fitting on this machine. In the Ray session:
a trial placeable on the attached cluster, the run folder with the request saved in it,
the first lines and the driver log, the callbacks (disk guard, placement watch, progress
view), the fit, and the clean-up after a start that failed.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raystudy.contract import storage
from raystudy.contract.data import check_writable, min_free_bytes
from raystudy.contract.study import Study
from raystudy.errors import ConfigError, Interrupted, MissingDataError, UserError
from raystudy.platform.configuration.config import (
    config_from_record,
    load_config,
    profile_sweep_defaults,
    to_flat_dict,
)
from raystudy.platform.configuration.registry import get_study
from raystudy.platform.configuration.spaces import build_param_space
from raystudy.platform.execution import preflight
from raystudy.platform.execution.progress import closing_line
from raystudy.platform.execution.request import (
    Options,
    Request,
    load_resumed,
    validate_request,
)
from raystudy.platform.execution.session import resolve_address
from raystudy.platform.execution.trainable import Compute
from raystudy.platform.runs.results import REQUEST_FILE
from raystudy.platform.runs.rundir import remove_failed_start, run_location, write_json_atomic
from raystudy.platform.tracking.optuna_store import open_storage, storage_url

LOG_FILE = "logs/driver.log"


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
            request = load_resumed(request)
        validate_request(request)
        study = get_study(request.study)
        if resume and request.config:
            config = config_from_record(study.config_cls, request.config)
        else:
            config = load_config(study.config_cls, study, request.profile, request.overrides)
            if not resume:
                request.config = to_flat_dict(config)
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

    def fit(self, tuner: Any, stopped: Callable[[], bool]) -> None:
        """Run the trials; the closing line, unless the sweep was stopped (Ctrl-C, a full
        disk: Tune then calls every trial terminated, and the stop's own line counts them
        from the trial index); on object storage, the log uploaded."""
        try:
            tuner.fit()
            closing = None if stopped() else closing_line(time.time() - self.started)
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
        elif placement_timeout(exc) is not None and not _any_report(self.run):
            storage.remove(self.run)  # no trial ever ran: nothing to resume
        elif not isinstance(exc, Interrupted):
            remove_failed_start(self.run)


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


def _new_run_name(request: Request, study: Study) -> str:
    return f"{study.name}-{request.kind}-{time.strftime('%Y%m%d-%H%M%S')}"


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


def _start_lines(run: str, log_path: Path, remote: bool, optuna_url: str | None) -> None:
    """Where things are: the log, the dashboard, TensorBoard on the run folder."""
    log = storage.join(run, LOG_FILE) if remote else log_path
    print(f"raystudy: full log (Ray, Tune): {log}", flush=True)
    if not remote:
        if optuna_url and optuna_url.startswith("sqlite"):
            print(f"raystudy: live dashboard: raystudy dashboard {run}", flush=True)
        print(f"raystudy: curves: tensorboard --logdir {run}", flush=True)


def _disk_guard(request: Request, root: str):
    if storage.is_remote(root):
        return None
    from raystudy.platform.execution.disk_guard import DiskSpaceGuard

    return DiskSpaceGuard(root, min_free_bytes())


def _placement_watch(request: Request, timeout_s: float):
    from raystudy.platform.execution.placement import PlacementWatch

    return PlacementWatch(request.compute.all_bundles(), timeout_s)


def _upload_log(local: Path, remote_log: str) -> None:
    """The driver log onto the store, after what earlier legs of the run left there."""
    before = storage.read_text(remote_log) if storage.exists(remote_log) else ""
    storage.write_text(remote_log, before + local.read_text())


def placement_timeout(exc: BaseException) -> UserError | None:
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
