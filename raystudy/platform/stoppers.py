"""Tune stoppers of the platform (importable by name: Tune pickles them with the run)."""

from __future__ import annotations

import shutil
import time
from typing import Any

from ray.tune import Stopper


class DiskSpaceStopper(Stopper):
    """Ends the sweep while the storage still has room to save its state (checked at most
    once a second); the runner turns a stop for this reason into one line and exit 2."""

    def __init__(self, folder: str, min_free: int) -> None:
        self.folder, self.min_free, self._next = folder, min_free, 0.0

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        return False

    def low(self) -> bool:
        try:
            return shutil.disk_usage(self.folder).free < self.min_free
        except OSError:
            return False

    def stop_all(self) -> bool:
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + 1.0
        return self.low()
