"""The Ray path's writer of the run's trial index (``runs.trials``): a Tune callback on the
driver that rewrites ``trials.json`` whenever a trial's status changes.

The file goes into the experiment's driver staging folder, which Tune uploads to
``--storage`` with its own files on every experiment checkpoint (and, forced, at the end
of the run), so the index on storage is as current as Tune's state beside it.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray import tune

from raystudy.platform.runs.trials import FROM_TUNE, TRIALS_FILE, TrialEntry, TrialIndex

WRITE_EVERY_S = 1.0
"""Status changes within this many seconds share one write, except a trial's end,
which is written at once (so the last write before an interrupt holds every ended trial)."""


def trial_entry(trial: Any) -> TrialEntry:
    """A Tune ``Trial`` as the index records it."""
    return TrialEntry(trial_id=trial.trial_id, params=dict(trial.config or {}),
                      status=FROM_TUNE.get(trial.status, "pending"),
                      logdir=trial.relative_logdir or "",
                      error_file=trial.run_metadata.error_filename)


def write_staged(staging: Path, index: TrialIndex) -> None:
    """``trials.json`` into Tune's staging folder, written beside it (its parent, the same
    file system) and renamed in: Tune's syncer, which may be listing the folder at that
    moment, never meets a temporary file that vanishes under it."""
    staging.mkdir(parents=True, exist_ok=True)
    temporary = staging.parent / f".{TRIALS_FILE}.{os.getpid()}.tmp"
    temporary.write_text(index.to_json())
    os.replace(temporary, staging / TRIALS_FILE)


class TrialIndexCallback(tune.Callback):
    """Writes ``trials.json`` into the experiment's staging folder as statuses change."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._written: list[tuple[str, str, str | None]] = []
        self._last_write = -math.inf

    def on_step_end(self, iteration: int, trials: list[Any], **info: Any) -> None:
        self.write(trials)

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        self.write(trials, force=True)

    def write(self, trials: list[Any], force: bool = False) -> None:
        """Rewrite the index when a status changed (see ``WRITE_EVERY_S``)."""
        if not trials:
            return
        key = [(t.trial_id, FROM_TUNE.get(t.status, "pending"), t.run_metadata.error_filename)
               for t in trials]  # every step: the statuses only, the entries when written
        if key == self._written and not force:
            return
        ended = {k for k in key if k[1] in ("done", "error")}
        newly_ended = bool(ended - set(self._written))
        now = self._clock()
        if not (force or newly_ended or now - self._last_write >= WRITE_EVERY_S):
            return
        write_staged(Path(trials[0].local_experiment_path),
                     TrialIndex([trial_entry(t) for t in trials]))
        self._written, self._last_write = key, now

    def __getstate__(self) -> dict[str, Any]:
        return {}  # pickled into Tune's tuner state: a restored run writes afresh

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]
