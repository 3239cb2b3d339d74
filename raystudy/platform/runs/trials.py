"""The run's trial index, ``trials.json``: raystudy's own record of every trial.

One entry per trial -- its id, params, status and folder -- written by the Ray path (a
Tune callback on the driver, synced to ``--storage`` with Tune's own files) and by the
in-process path alike, and read by ``results``. No reader depends on the layout of Tune's
private ``experiment_state-*.json``; that file is read only for run folders written before
the index existed, and kept on disk because ``Tuner.restore`` needs it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from raystudy.contract.storage import write_text_atomic
from raystudy.errors import DataError

TRIALS_FILE = "trials.json"
FORMAT = 1
STATE_GLOB = "experiment_state-*.json"

Status = Literal["pending", "running", "done", "error"]
"""``done``: the trial's loop returned (it may still have diverged: ``results`` says);
``error``: it raised; ``pending``/``running``: not started, or not ended (killed, paused)."""

FROM_TUNE: dict[str, Status] = {"PENDING": "pending", "PAUSED": "pending",
                                "RUNNING": "running", "TERMINATED": "done", "ERROR": "error"}


@dataclass(frozen=True)
class TrialEntry:
    """One trial of a run: ``logdir`` relative to the run folder ("" before it starts)."""

    trial_id: str
    params: dict[str, Any] = field(default_factory=dict)
    status: Status = "pending"
    logdir: str = ""
    error_file: str | None = None


@dataclass(frozen=True)
class TrialIndex:
    """Every trial of a run, and whether the run's loop ran in the driver (no Ray)."""

    trials: list[TrialEntry]
    in_process: bool = False

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, "in_process": self.in_process,
                           "trials": [asdict(t) for t in self.trials]},
                          indent=1, default=str) + "\n"


def write_index(run_dir: Path | str, index: TrialIndex) -> None:
    """``trials.json`` in ``run_dir``, written aside and renamed over (never half-written)."""
    write_text_atomic(Path(run_dir) / TRIALS_FILE, index.to_json())


def read_index(run_dir: Path) -> TrialIndex | None:
    """The run's ``trials.json``; None when it has none (a run older than the index)."""
    path = run_dir / TRIALS_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        entries = [TrialEntry(trial_id=str(t["trial_id"]), params=dict(t.get("params") or {}),
                              status=t.get("status", "pending"), logdir=t.get("logdir") or "",
                              error_file=t.get("error_file"))
                   for t in data["trials"]]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise DataError(f"{path} is corrupt ({type(exc).__name__}: truncated or "
                        "overwritten?); it is rewritten when the run is resumed") from None
    return TrialIndex(entries, in_process=bool(data.get("in_process", False)))


def read_tune_state(run_dir: Path) -> list[TrialEntry]:
    """The trials of Tune's newest ``experiment_state-*.json`` (a run older than the
    index); empty when there is none."""
    states = sorted(run_dir.glob(STATE_GLOB))
    if not states:
        return []
    try:
        data = json.loads(states[-1].read_text())
        entries = []
        for trial_json, runtime_json in data.get("trial_data", []):
            trial = json.loads(trial_json) if isinstance(trial_json, str) else trial_json
            runtime = json.loads(runtime_json) if isinstance(runtime_json, str) else runtime_json
            entries.append(TrialEntry(
                trial_id=trial["trial_id"], params=dict(trial.get("config") or {}),
                status=FROM_TUNE.get(trial.get("status", ""), "pending"),
                logdir=trial.get("relative_logdir") or "",
                error_file=dict(runtime).get("error_filename")))
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise DataError(f"{states[-1]} is corrupt ({type(exc).__name__}: truncated or "
                        "overwritten?); Tune rewrites it when the sweep is resumed") from None
    return entries


def trial_entries(run_dir: Path) -> list[TrialEntry]:
    """Every trial of the run: from ``trials.json``, else from Tune's state (older runs)."""
    index = read_index(run_dir)
    return index.trials if index is not None else read_tune_state(run_dir)
