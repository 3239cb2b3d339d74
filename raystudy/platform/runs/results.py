"""Read a run folder back: one record per trial, from the files on disk.

Works on a copied folder without Ray running: trial status and errors come from the run's
trial index (``trials.json``, see ``trials``), each trial's history from its
``result.json``. Status is one of ``finished``, ``diverged``, ``error`` or ``unfinished``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from raystudy.contract.results import RunResults, TrialRecord
from raystudy.errors import DataError, UserError
from raystudy.platform.runs.trials import trial_entries

REQUEST_FILE = "raystudy.json"


def _read_history(logdir: Path) -> list[dict[str, Any]]:
    """A trial's reports from its ``result.json``, each step once: a trial restored from
    an earlier checkpoint (after a crash or Ctrl-C) redoes the steps after it, and Tune
    appends those again; the later report of a step replaces the earlier one."""
    path = logdir / "result.json"
    if not path.exists():
        return []
    rows: list[dict[str, Any]] = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            break  # a line cut short by a crash; everything before it is intact
        step = row.get("training_iteration")
        while isinstance(step, int) and rows and rows[-1].get("training_iteration", -1) >= step:
            rows.pop()  # restored from an earlier checkpoint: the redone step replaces these
        rows.append(row)
    return rows


def read_error(logdir: Path, filename: str | None) -> str:
    """The last line of a trial's error file (``filename`` or ``logdir/error.txt``)."""
    for candidate in ([filename] if filename else []) + ["error.txt"]:
        path = Path(candidate) if Path(candidate).is_absolute() else logdir / candidate
        if path.exists():
            lines = [ln for ln in path.read_text().strip().splitlines() if ln.strip()]
            return lines[-1][:300] if lines else "error"
    return "error"


def _status(index_status: str, history: list[dict[str, Any]], has_error: bool) -> str:
    if has_error or index_status == "error":
        return "error"
    if history and history[-1].get("diverged"):
        return "diverged"
    if index_status == "done":
        return "finished"
    return "unfinished"


def load_results(run_dir: Path | str) -> RunResults:
    """Load every trial of a run folder; a folder that is not a run is a UserError."""
    run_dir = Path(run_dir)
    request_path = run_dir / REQUEST_FILE
    if not request_path.exists():
        raise UserError(f"{run_dir} is not a raystudy run folder (no {REQUEST_FILE})")
    try:
        request = json.loads(request_path.read_text())
    except ValueError:
        raise DataError(f"{request_path} is corrupt (not JSON)") from None
    if not isinstance(request, dict) or "study" not in request:
        raise DataError(f"{request_path} is corrupt (no study named)")
    trials = []
    for entry in trial_entries(run_dir):
        logdir = run_dir / entry.logdir
        history = _read_history(logdir)
        has_error = bool(entry.error_file) or (logdir / "error.txt").exists()
        if entry.status == "done" and history and not history[-1].get("diverged"):
            has_error = False  # a trial that failed, was retried and then finished
        trials.append(
            TrialRecord(
                trial_id=entry.trial_id,
                params=dict(entry.params),
                status=_status(entry.status, history, has_error),
                history=history,
                error=read_error(logdir, entry.error_file) if has_error else None,
                logdir=logdir,
            )
        )
    return RunResults(run_dir=run_dir, request=request, trials=trials)
