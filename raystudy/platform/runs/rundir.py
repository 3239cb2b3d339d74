"""Run folders under ``--storage``: where they are, when they are resumable, atomic writes.

A run folder is a local path or a URI on object storage (see ``storage``); the functions
here take either. A folder becomes resumable only once it holds run state: Tune's
experiment state (``experiment_state-*.json``, what ``Tuner.restore`` reads) for a Ray run,
the trial index for an in-process one; a folder without either is what a failed start left
behind and is removed by the runner (or never created). ``--resume`` without ``--name``
considers only folders with that state and unfinished trials.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from raystudy.contract import storage
from raystudy.contract.storage import write_text_atomic
from raystudy.errors import DataError, UserError
from raystudy.platform.runs.results import REQUEST_FILE
from raystudy.platform.runs.trials import STATE_GLOB, read_index, trial_entries

__all__ = ["find_resumable", "has_run_state", "read_summary", "remove_failed_start",
           "run_location", "trial_counts", "unfinished", "write_json_atomic",
           "write_text_atomic"]

def has_run_state(run: Path | str) -> bool:
    """The run folder can be resumed: Tune's experiment state is in it (what
    ``Tuner.restore`` reads), or the trial index of an in-process run."""
    if storage.is_remote(run):
        return bool(storage.list_files(run, STATE_GLOB))  # in-process runs are local
    if any(Path(run).glob(STATE_GLOB)):
        return True
    try:
        index = read_index(Path(run))
    except DataError:
        return False
    return index is not None and index.in_process


def trial_counts(run: Path | str) -> tuple[int, int] | None:
    """``(ended, total)`` trials from the run's trial index; None if unreadable."""
    if storage.is_remote(run):
        try:
            with storage.local_copy(run, recursive=False) as copy:
                return trial_counts(copy)
        except UserError:
            return None
    try:
        entries = trial_entries(Path(run))
    except (DataError, OSError):
        return None
    if not entries:
        return None
    return sum(e.status == "done" for e in entries), len(entries)


def read_summary(run: Path | str) -> dict[str, Any] | None:
    """The run's ``summary.json``; None when there is none or it is not a JSON object."""
    location = storage.join(str(run), "summary.json")
    try:
        if storage.is_remote(location) and not storage.exists(location):
            return None
        summary = storage.read_json(location)
    except UserError:
        return None
    return summary if isinstance(summary, dict) else None


def unfinished(run: Path | str) -> bool:
    """No summary yet (killed), or a summary that counts unfinished trials (interrupted)."""
    try:
        counts = (read_summary(run) or {})["counts"]
        return counts.get("unfinished", 0) > 0
    except (KeyError, TypeError, AttributeError):
        return True


def _study_of(run_dir: Path) -> str | None:
    try:
        saved = json.loads((run_dir / REQUEST_FILE).read_text())
    except (OSError, ValueError):
        return None
    return saved.get("study") if isinstance(saved, dict) else None


def find_resumable(storage_arg: str, study: str) -> Path | str | None:
    """The newest ``study`` run folder under ``--storage`` that Tune can restore and that
    has unfinished trials; folders a failed start left behind (no Tune state) are skipped.
    A local folder comes back as a Path, one on object storage as its URI."""
    root = storage.root(storage_arg)
    if not storage.is_remote(root):
        candidates = [request_file.parent for request_file in Path(root).glob(f"*/{REQUEST_FILE}")
                      if _study_of(request_file.parent) == study
                      and has_run_state(request_file.parent) and unfinished(request_file.parent)]
        return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None
    newest: tuple[float, str] | None = None
    for folder in storage.list_dirs(root):
        run = storage.join(root, folder)
        files = storage.list_files(run)
        states = [mtime for name, mtime in files.items() if Path(name).match(STATE_GLOB)]
        if REQUEST_FILE not in files or not states:
            continue
        with storage.local_copy(run, recursive=False) as copy:
            if _study_of(copy) != study or not unfinished(copy):
                continue
        if newest is None or max(states) > newest[0]:
            newest = (max(states), run)
    return newest[1] if newest else None


def remove_failed_start(run: Path | str) -> None:
    """Remove a run folder that never got run state (nothing in it can be resumed)."""
    if storage.is_remote(run):
        try:
            if not has_run_state(run):
                storage.remove(run)
        except UserError:
            pass  # the store itself failed; that error is the one the user sees
        return
    run_dir = Path(run)
    if run_dir.is_dir() and not has_run_state(run_dir):
        shutil.rmtree(run_dir, ignore_errors=True)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON next to ``path`` and rename it over; a failed write leaves no temp file."""
    write_text_atomic(path, json.dumps(data, indent=2, default=str) + "\n")


def run_location(storage_arg: str, run_name: str) -> str:
    """The run folder ``run_name`` under ``--storage``: an absolute path or a URI."""
    return storage.join(storage.root(storage_arg), run_name)

