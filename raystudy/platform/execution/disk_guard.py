"""Stop a sweep while its storage still has room to save the state (importable by name:
Tune pickles callbacks with the run)."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import time
from typing import Any

from ray.tune import Callback


class DiskSpaceGuard(Callback):
    """Checks the storage's free space at most once a second; below ``min_free`` bytes it
    asks Tune for the same graceful stop as Ctrl-C (state saved, the search not marked
    finished, so ``--resume`` continues it). The runner turns it into one line, exit 2."""

    def __init__(self, folder: str, min_free: int) -> None:
        self.folder, self.min_free, self._next = folder, min_free, 0.0

    def low(self) -> bool:
        try:
            return shutil.disk_usage(self.folder).free < self.min_free
        except OSError:
            return False

    def on_step_begin(self, iteration: int, trials: list, **info: Any) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + 1.0
        tune_stop = signal.getsignal(signal.SIGUSR1)  # Tune's "interrupted" handler
        if self.low() and callable(tune_stop):
            logging.getLogger("ray.tune").setLevel(logging.CRITICAL)
            self._next = float("inf")
            os.kill(os.getpid(), signal.SIGUSR1)
