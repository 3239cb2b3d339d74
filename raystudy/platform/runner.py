"""``raystudy run`` and ``raystudy sweep``: build the Tuner, run it, write the report.

A run is a sweep of one trial, so both share one path: the same results layout,
checkpoints, divergence handling and resume. The request is saved as
``raystudy.json`` in the run folder before the first trial starts, so
``--resume`` (and ``raystudy report``) know the study, profile, overrides and space.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raystudy.errors import ConfigError, UserError
from raystudy.platform.config import load_config, profile_sweep_defaults
from raystudy.platform.registry import get_study
from raystudy.platform.results import REQUEST_FILE
from raystudy.platform.session import ray_session, resolve_address
from raystudy.platform.study import Study
from raystudy.platform.trainable import Compute, make_trainable

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
    mlflow: bool = False  # log every trial to MLflow at file:<run_dir>/mlruns

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Request:
        data = dict(data)
        data["compute"] = Compute(**data.get("compute", {}))
        return cls(**data)


def storage_root(storage: str) -> str:
    """Absolute local path (or an unchanged URI such as s3://bucket/runs)."""
    return storage if "://" in storage else os.path.abspath(storage)


def is_local(storage: str) -> bool:
    return "://" not in storage


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
    if request.compute.workers < 0 or request.compute.gpus_per_worker < 0:
        raise UserError("--workers and --gpus-per-worker must be >= 0")


def _search_alg(request: Request, study: Study):
    if request.search != "optuna":
        from ray.tune.search.basic_variant import BasicVariantGenerator

        return BasicVariantGenerator(random_state=request.seed)
    import optuna
    from ray.tune.search.optuna import OptunaSearch

    return OptunaSearch(
        metric=study.primary.name,
        mode=study.primary.mode,
        sampler=optuna.samplers.TPESampler(seed=request.seed),
    )


def _scheduler(request: Request, sweep_defaults: dict[str, Any]):
    if request.scheduler == "fifo":
        return None
    from ray.tune.schedulers import ASHAScheduler

    asha = dict(sweep_defaults.get("asha") or {})
    return ASHAScheduler(
        time_attr="training_iteration",
        max_t=int(asha.get("max_t", 100)),
        grace_period=int(asha.get("grace_period", 1)),
        reduction_factor=float(asha.get("reduction_factor", 3)),
    )


def _param_space(request: Request, study: Study, config: Any, sweep_defaults: dict[str, Any]):
    from raystudy.platform.spaces import build_param_space, load_space

    if request.kind == "run":
        return {}, 1
    space_name = request.space or sweep_defaults.get("space", "default")
    return build_param_space(load_space(study.name, space_name), config, request.search)


def _tracking_callbacks(request: Request, run_dir: Path) -> list[Any]:
    """Optional experiment tracking: MLflow into a local file store inside the run folder."""
    if not request.mlflow:
        return []
    try:
        import mlflow  # noqa: F401
        from ray.air.integrations.mlflow import MLflowLoggerCallback
    except ImportError:
        raise UserError("--mlflow needs mlflow: pip install 'raystudy[tracking]' "
                        "(or mlflow-skinny)") from None
    if not is_local(request.storage):
        return [MLflowLoggerCallback(experiment_name=request.name)]  # MLFLOW_TRACKING_URI
    # MLflow 3 keeps its file store in maintenance mode behind this switch; the file
    # store needs no server and no database, which is what an offline run folder wants.
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = f"file:{run_dir / 'mlruns'}"
    return [MLflowLoggerCallback(tracking_uri=uri, experiment_name=request.name)]


def _new_run_name(request: Request) -> str:
    return f"{request.study}-{request.kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def find_resumable(storage: str, study: str) -> Path | None:
    """The newest run folder of ``study`` under ``storage`` that has no summary yet."""
    root = Path(storage_root(storage))
    candidates = []
    for request_file in root.glob(f"*/{REQUEST_FILE}"):
        try:
            saved = json.loads(request_file.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if saved.get("study") == study and _unfinished(request_file.parent):
            candidates.append(request_file.parent)
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None


def _unfinished(run_dir: Path) -> bool:
    """No summary yet (killed), or a summary that counts unfinished trials (interrupted)."""
    try:
        counts = json.loads((run_dir / "summary.json").read_text())["counts"]
    except (OSError, json.JSONDecodeError, KeyError):
        return True
    return counts.get("unfinished", 0) > 0


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temporary file and rename it, so a crash leaves no half file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)


def _write_remote(uri: str, data: Any) -> None:
    """Write JSON to object storage (s3://, gs://) through pyarrow, as Tune does."""
    import pyarrow.fs

    try:
        fs, path = pyarrow.fs.FileSystem.from_uri(uri)
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(path) as stream:
            stream.write((json.dumps(data, indent=2, default=str) + "\n").encode())
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot write to --storage {uri}: {str(exc).splitlines()[0]}") from None


def execute(request: Request, resume: bool = False, address: str | None = None) -> Path:
    """Run (or resume) a run/sweep; returns the run folder with its report."""
    from ray import tune

    if resume:
        request = _load_resumed(request)
    _validate_request(request)
    study = get_study(request.study)
    config = load_config(study.config_cls, study.name, request.profile, request.overrides)
    sweep_defaults = profile_sweep_defaults(study.name, request.profile)
    param_space, grid_size = _param_space(request, study, config, sweep_defaults)
    if request.compute.workers and not study.supports_workers:
        raise UserError(f"study {study.name} does not support --workers")
    if study.check_data and resolve_address(address) is None:
        study.check_data(config)  # on a cluster the data may live only there

    request.name = request.name or _new_run_name(request)
    root = storage_root(request.storage)
    run_dir = Path(root) / request.name
    where_results = run_dir if is_local(request.storage) else f"{root.rstrip('/')}/{request.name}"
    if is_local(request.storage):
        if not resume and (run_dir / REQUEST_FILE).exists():
            raise UserError(f"run folder {run_dir} exists; pass --resume or another --name")
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(run_dir / REQUEST_FILE, request.to_json())
    elif not resume:
        _write_remote(f"{where_results}/{REQUEST_FILE}", request.to_json())

    trainable = tune.with_resources(
        make_trainable(study, config, request.compute, os.path.join(root, request.name, "train")),
        request.compute.resources(),
    )
    # Save Tune's experiment state every second (default: up to every 10 s), so a killed
    # driver loses at most a second of finished trials; the user can still override it.
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", "1")
    started = time.time()
    with ray_session(address) as where:
        print(f"raystudy: {request.kind} {study.name} ({grid_size * request.samples} trial(s)) "
              f"on {where}; results in {where_results}", flush=True)
        if resume and not tune.Tuner.can_restore(str(run_dir)):
            print("raystudy: no Tune state saved yet in that folder; starting it afresh")
            resume = False
        if resume:
            tuner = tune.Tuner.restore(
                str(run_dir), trainable=trainable, resume_unfinished=True, resume_errored=False
            )
        else:
            tuner = tune.Tuner(
                trainable,
                param_space=param_space,
                tune_config=tune.TuneConfig(
                    metric=study.primary.name,
                    mode=study.primary.mode,
                    search_alg=_search_alg(request, study),
                    scheduler=_scheduler(request, sweep_defaults),
                    num_samples=request.samples,
                    max_concurrent_trials=request.max_concurrent,
                    reuse_actors=study.reuse_actors and request.compute.workers == 0,
                ),
                run_config=tune.RunConfig(
                    name=request.name,
                    storage_path=root,
                    failure_config=tune.FailureConfig(
                        max_failures=request.trial_max_failures, fail_fast=False
                    ),
                    checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
                    callbacks=_tracking_callbacks(request, run_dir),
                ),
            )
        tuner.fit()
    elapsed = time.time() - started
    if not is_local(request.storage):
        print(f"raystudy: results are in {where_results}; "
              "run `raystudy report` on a local copy")
        return run_dir
    from raystudy.platform.report import write_report

    report_path = write_report(run_dir, wall_time_s=elapsed)
    print(f"raystudy: report written to {report_path}", flush=True)
    if _unfinished(run_dir):
        print(f"raystudy: some trials did not finish; continue with `raystudy {request.kind} "
              f"{study.name} --resume --name {request.name} --storage {request.storage}`")
    return run_dir


def _load_resumed(request: Request) -> Request:
    if request.name:
        run_dir = Path(storage_root(request.storage)) / request.name
    else:
        run_dir = find_resumable(request.storage, request.study)
        if run_dir is None:
            raise UserError(
                f"--resume: no unfinished {request.study} run under {request.storage}; "
                "name one with --name"
            )
    request_file = run_dir / REQUEST_FILE
    if not request_file.exists():
        raise UserError(f"--resume: {run_dir} is not a raystudy run folder (no {REQUEST_FILE})")
    try:
        saved = Request.from_json(json.loads(request_file.read_text()))
    except (json.JSONDecodeError, TypeError) as exc:
        raise ConfigError(f"--resume: {request_file} is corrupt: {exc}") from None
    if saved.study != request.study:
        raise UserError(f"--resume: {run_dir} is a {saved.study} run, not {request.study}")
    saved.storage = request.storage
    return saved
