"""Run folders under ``--storage``: where they are, when they are resumable, atomic writes.

A folder becomes resumable only once Tune has written its experiment state
(``experiment_state-*.json``); a folder without one is what a failed start left behind
and is removed by the runner (or never created). ``--resume`` without ``--name``
considers only folders with that state and unfinished trials.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from raystudy.errors import DataError, UserError
from raystudy.platform.results import REQUEST_FILE, STATE_GLOB, trial_states


def storage_root(storage: str) -> str:
    """Absolute local path (or an unchanged URI such as s3://bucket/runs)."""
    return storage if "://" in storage else os.path.abspath(os.path.expanduser(storage))


def is_local(storage: str) -> bool:
    return "://" not in storage


def has_tune_state(run_dir: Path) -> bool:
    return any(run_dir.glob(STATE_GLOB))


def trial_counts(run_dir: Path) -> tuple[int, int] | None:
    """``(finished, total)`` trials from Tune's newest experiment state; None if unreadable."""
    try:
        states = trial_states(run_dir)
    except (DataError, OSError):
        return None
    if not states:
        return None
    statuses = [trial.get("status") for trial, _ in states]
    return sum(s == "TERMINATED" for s in statuses), len(statuses)


def unfinished(run_dir: Path) -> bool:
    """No summary yet (killed), or a summary that counts unfinished trials (interrupted)."""
    try:
        counts = json.loads((run_dir / "summary.json").read_text())["counts"]
    except (OSError, ValueError, KeyError, TypeError):
        return True
    return counts.get("unfinished", 0) > 0


def find_resumable(storage: str, study: str) -> Path | None:
    """The newest ``study`` run folder under ``storage`` that Tune can restore and that has
    unfinished trials; folders a failed start left behind (no Tune state) are skipped."""
    root = Path(storage_root(storage))
    candidates = []
    for request_file in root.glob(f"*/{REQUEST_FILE}"):
        try:
            saved = json.loads(request_file.read_text())
        except (OSError, ValueError):
            continue
        run_dir = request_file.parent
        if (isinstance(saved, dict) and saved.get("study") == study and has_tune_state(run_dir)
                and unfinished(run_dir)):
            candidates.append(run_dir)
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None


def remove_failed_start(run_dir: Path) -> None:
    """Remove a run folder that never got Tune state (nothing in it can be resumed)."""
    if run_dir.is_dir() and not has_tune_state(run_dir):
        shutil.rmtree(run_dir, ignore_errors=True)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON next to ``path`` and rename it over; a failed write leaves no temp file."""
    write_text_atomic(path, json.dumps(data, indent=2, default=str) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_remote(uri: str, data: Any) -> None:
    """Write JSON to object storage (s3://, gs://) through pyarrow, as Tune does."""
    import pyarrow.fs

    try:
        fs, path = pyarrow.fs.FileSystem.from_uri(uri)
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(path) as stream:
            stream.write((json.dumps(data, indent=2, default=str) + "\n").encode())
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot write to --storage {uri}: {str(exc).splitlines()[0]}") from None
