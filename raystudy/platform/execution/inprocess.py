"""``raystudy run STUDY --in-process``: the trial's loop in this Python process, no Ray.

The way to debug a study: ``breakpoint()``, ``pdb``, a profiler and print all work, and a
two-step run takes seconds instead of an embedded Ray's start. The run folder is the one
a Ray run writes -- ``raystudy.json``, Tune's experiment state and trial folder
(``result.json`` one report a line, ``params.json``, TensorBoard events,
``checkpoint_NNNNNN/state.pt``), ``summary.json`` and the report -- so ``raystudy
report``, ``raystudy dashboard`` and ``--resume`` work on it. The Optuna database the
dashboard reads is written when ``raystudy dashboard`` first opens the folder (or at the
end of the run, for a database named with ``--optuna-storage``), not on the way.

``ctx.map`` runs its items one after the other here (a breakpoint in the mapped function
stops there too); ``--map-tasks N`` still cuts ``map_chunks`` into N chunks, as a Ray run
would. Options that need Ray (``--workers``, ``--address``, ``--mlflow``) are refused in
one line. A resumed run continues after its last checkpointed step; reports made after
that checkpoint are dropped from ``result.json`` first, so no step is recorded twice.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from raystudy.contract.context import CHECKPOINT_FILE, BaseContext
from raystudy.contract.study import Metric
from raystudy.errors import Interrupted, UserError
from raystudy.platform.report.report import format_value
from raystudy.platform.runs.rundir import write_json_atomic
from raystudy.platform.runs.trials import (
    Status,
    TrialEntry,
    TrialIndex,
    read_index,
    write_index,
)

KEEP_CHECKPOINTS = 2
"""As ``CheckpointConfig(num_to_keep=2)`` of a Ray run."""


def refuse_ray_options(given: dict[str, object]) -> None:
    """One line for the first option an in-process run cannot honour; ``given`` maps each
    Ray-only flag to a value that is truthy where the user set it."""
    for flag, value in given.items():
        if value:
            raise UserError(f"{flag} needs Ray; --in-process runs the loop in this process "
                            f"without it: drop {flag} or --in-process")


class TrialFolder:
    """One trial's files in the layout Tune writes, so the platform's readers see a run."""

    def __init__(self, run_dir: Path, study: str, trial_id: str | None = None) -> None:
        self.run_dir = run_dir
        index = read_index(run_dir)
        if index is not None and index.trials:  # resumed: the same trial and folder
            self.trial_id, self.name = index.trials[0].trial_id, index.trials[0].logdir
        else:
            self.trial_id = trial_id or f"{uuid.uuid4().hex[:5]}_00000"
            self.name = f"{study}_{self.trial_id}"
        self.path = run_dir / self.name
        self.path.mkdir(parents=True, exist_ok=True)
        self.started = time.time()

    def write_state(self, status: Status, params: Mapping[str, Any],
                    error: bool = False) -> None:
        """The run's trial index (``trials.json``): this trial's status, params, folder."""
        entry = TrialEntry(trial_id=self.trial_id, params=dict(params), status=status,
                           logdir=self.name, error_file="error.txt" if error else None)
        write_index(self.run_dir, TrialIndex([entry], in_process=True))

    def failed(self) -> bool:
        return (self.path / "error.txt").exists()

    # ---------------------------------------------------------------- reports
    def history(self) -> list[dict[str, Any]]:
        path = self.path / "result.json"
        if not path.exists():
            return []
        rows = []
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a line cut short by a crash
        return rows

    def truncate_after(self, iteration: int) -> None:
        """Drop reports after ``iteration`` (those after the last checkpoint, on resume)."""
        kept = [row for row in self.history() if row.get("training_iteration", 0) <= iteration]
        (self.path / "result.json").write_text("".join(json.dumps(r) + "\n" for r in kept))

    def append(self, row: dict[str, Any]) -> None:
        with open(self.path / "result.json", "a") as handle:
            handle.write(json.dumps(row, default=str) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    # ---------------------------------------------------------------- checkpoints
    def checkpoints(self) -> list[Path]:
        return sorted(p for p in self.path.glob("checkpoint_*") if (p / CHECKPOINT_FILE).exists())

    def save_checkpoint(self, state: Mapping[str, Any], index: int) -> str:
        """``checkpoint_{index:06d}/state.pt``, written aside and renamed into place."""
        import torch

        final = self.path / f"checkpoint_{index:06d}"
        staging = self.path / f".{final.name}.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        torch.save(dict(state), staging / CHECKPOINT_FILE)
        shutil.rmtree(final, ignore_errors=True)
        staging.rename(final)
        for old in self.checkpoints()[:-KEEP_CHECKPOINTS]:
            shutil.rmtree(old, ignore_errors=True)
        return final.name

    def load_checkpoint(self) -> tuple[dict[str, Any], int] | None:
        """The newest checkpoint's state and the iteration of the report that made it."""
        import torch

        found = self.checkpoints()
        if not found:
            return None
        newest = found[-1]
        iteration = next((row["training_iteration"] for row in reversed(self.history())
                          if row.get("checkpoint_dir_name") == newest.name), None)
        if iteration is None:  # the report naming it was lost: count what is before it
            iteration = int(newest.name.rsplit("_", 1)[1]) + 1
        return torch.load(newest / CHECKPOINT_FILE, weights_only=False), iteration


class InProcessContext(BaseContext):
    """A ``TrialContext`` that writes its reports and checkpoints into a ``TrialFolder``."""

    def __init__(self, metrics: tuple[Metric, ...], folder: TrialFolder, config: dict[str, Any],
                 on_report: Any = None, device: str = "auto", map_tasks: int = 0) -> None:
        super().__init__(metrics, device=device, map_tasks=map_tasks)
        self.folder = folder
        self.config = config
        self.on_report = on_report
        self.iteration = 0
        self.checkpoint_index = 0
        self.time_total = 0.0
        self.last_time = time.time()
        resumed = folder.load_checkpoint()
        self._resumed_state = None
        if resumed is not None:
            self._resumed_state, self.iteration = resumed
            self.checkpoint_index = int(folder.checkpoints()[-1].name.rsplit("_", 1)[1]) + 1
            folder.truncate_after(self.iteration)
            history = folder.history()
            self.time_total = float(history[-1].get("time_total_s", 0.0)) if history else 0.0
        else:
            folder.truncate_after(0)

    def _read_checkpoint(self) -> dict[str, Any] | None:
        return self._resumed_state

    def _map_remote(self, fn: Any, items: list[Any]) -> list[Any]:
        from raystudy.contract.context import map_local

        return map_local(fn, items)  # serially, in this process: breakpoints work

    def _send(self, metrics: dict[str, Any], checkpoint: Mapping[str, Any] | None) -> None:
        now = time.time()
        self.iteration += 1
        elapsed, self.last_time = now - self.last_time, now
        self.time_total += elapsed
        name = None
        if checkpoint is not None:
            name = self.folder.save_checkpoint(checkpoint, self.checkpoint_index)
            self.checkpoint_index += 1
        row = {**metrics, "node_id": self.node_id, "timestamp": int(now),
               "checkpoint_dir_name": name, "done": False,
               "training_iteration": self.iteration, "trial_id": self.folder.trial_id,
               "date": time.strftime("%Y-%m-%d_%H-%M-%S"), "time_this_iter_s": elapsed,
               "time_total_s": self.time_total, "pid": os.getpid(),
               "hostname": socket.gethostname(), "config": self.config}
        self.folder.append(row)
        if self.on_report is not None:
            self.on_report(row)


def write_events(folder: TrialFolder) -> None:
    """TensorBoard scalars of every numeric report, as Tune's logger writes them."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        return
    for old in folder.path.glob("events.out.tfevents.*"):
        old.unlink()
    writer = SummaryWriter(str(folder.path), flush_secs=3600)
    for row in folder.history():
        for key, value in row.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in (
                    "timestamp", "pid", "training_iteration"):
                writer.add_scalar(f"ray/tune/{key}", value, row["training_iteration"])
    writer.close()


def record_trial(url: str, study_name: str, metric: Metric, trial_id: str,
                 history: list[dict[str, Any]], failed: bool) -> None:
    """The run's one trial in an Optuna database (for ``raystudy dashboard``): its
    intermediate values of the primary metric, user attributes and final state. Done once,
    at the end of the run or when the dashboard first opens the run folder."""
    import optuna
    from optuna.trial import TrialState

    from raystudy.platform.tracking.optuna_store import TUNE_ID, open_storage, result_attrs

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(url)
    study = optuna.create_study(storage=storage, study_name=study_name, load_if_exists=True,
                                direction="minimize" if metric.mode == "min" else "maximize")
    if any(t.user_attrs.get(TUNE_ID) == trial_id for t in study.get_trials(deepcopy=False)):
        return  # recorded before
    trial = storage.create_new_trial(study._study_id)
    storage.set_trial_user_attr(trial, TUNE_ID, trial_id)
    for row in history:
        value = row.get(metric.name)
        if isinstance(value, (int, float)) and math.isfinite(value):
            storage.set_trial_intermediate_value(trial, row["training_iteration"], value)
    last = history[-1] if history else {}
    for key, value in result_attrs(last).items():
        storage.set_trial_user_attr(trial, key, value)
    value = last.get(metric.name)
    if failed or not isinstance(value, (int, float)) or math.isnan(value):
        storage.set_trial_state_values(trial, TrialState.FAIL)
    else:
        storage.set_trial_state_values(trial, TrialState.COMPLETE, [value])


def record_run(run_dir: Path, url: str) -> None:
    """``record_trial`` for an in-process run folder (the dashboard's first look at it)."""
    from raystudy.platform.configuration.registry import get_study
    from raystudy.platform.runs.results import REQUEST_FILE

    request = json.loads((run_dir / REQUEST_FILE).read_text())
    folder = TrialFolder(run_dir, request["study"])
    index = read_index(run_dir)
    failed = index is None or not index.trials or index.trials[0].status == "error"
    record_trial(url, request["name"], get_study(request["study"]).primary, folder.trial_id,
                 folder.history(), failed)


def _progress_line(row: dict[str, Any], metrics: tuple[Metric, ...], started: float) -> str:
    step, total = row.get("progress/step"), row.get("progress/total")
    where = (f"step {int(step)}/{int(total)}" if step and total
             else f"report {row['training_iteration']}")
    values = ", ".join(f"{m.name} {format_value(row[m.name])}" for m in metrics
                       if m.name in row)
    seconds = int(time.time() - started)
    return f"raystudy: {where}: {values or 'no study metric'}; {seconds // 60}:{seconds % 60:02d}"


def run_in_process(plan: Any) -> Path:
    """Run (or resume) the one trial of a validated ``plan.Plan`` in this process;
    returns the run folder (see the module docstring)."""
    from raystudy.platform.configuration.config import to_flat_dict
    from raystudy.platform.execution import preflight
    from raystudy.platform.execution.finish import finish_run
    from raystudy.platform.execution.trainable import run_loop
    from raystudy.platform.runs.results import REQUEST_FILE

    if plan.request.kind != "run":
        raise UserError("--in-process runs one trial (raystudy run); a sweep needs Ray")
    plan.resolve_storage()
    if plan.remote:
        raise UserError("--in-process writes a local run folder; --storage on object storage "
                        "needs Ray (drop --in-process)")
    if plan.study.memory_estimate is not None:  # map work runs serially: no CPUs to check
        estimate, detail = plan.study.memory_estimate(plan.config)
        preflight.check_memory(estimate, preflight.local_capacity(ray_view=False), detail)
    run_dir, study = plan.run_dir, plan.study
    created = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(run_dir / REQUEST_FILE, plan.request.to_json())
    folder = TrialFolder(run_dir, study.name)
    params: dict[str, Any] = {}
    write_json_atomic(folder.path / "params.json", params)

    def on_report(row: dict[str, Any]) -> None:
        print(_progress_line(row, study.metrics, plan.started), flush=True)

    print(f"raystudy: run {study.name} in this process (no Ray); results in {run_dir}",
          flush=True)
    folder.write_state("running", params)
    ctx = InProcessContext(study.metrics, folder, to_flat_dict(plan.config), on_report,
                           device=plan.request.compute.device,
                           map_tasks=plan.request.compute.map_tasks)
    try:
        if study.datasets is not None:
            ctx.datasets = dict(study.datasets(plan.config))
        run_loop(study, plan.config, ctx)
    except KeyboardInterrupt:
        if not folder.history() and created:
            shutil.rmtree(run_dir, ignore_errors=True)
            raise Interrupted("interrupted before the first report", "") from None
        raise Interrupted("interrupted", plan.request.resume_command()) from None
    except Exception as exc:
        import traceback

        (folder.path / "error.txt").write_text(
            f"Failure # 1 (occurred at {time.strftime('%Y-%m-%d_%H-%M-%S')})\n"
            + "".join(traceback.format_exception(exc)))
        folder.write_state("error", params, error=True)
        print(f"raystudy: the trial failed: {type(exc).__name__}: {exc}", flush=True)
    else:
        folder.write_state("done", params)
    if plan.optuna_url and plan.request.optuna_storage:  # a database named: recorded now;
        record_trial(plan.optuna_url, plan.request.name, study.primary, folder.trial_id,
                     folder.history(), failed=folder.failed())  # the run's own: by dashboard
    write_events(folder)
    finish_run(plan.request, str(run_dir), time.time() - plan.started)
    return run_dir
