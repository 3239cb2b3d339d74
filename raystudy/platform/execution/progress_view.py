"""The sweep's progress as a Tune callback: counts, best trial, elapsed and remaining
time, as one live line on a terminal or plain lines in a pipe (see ``progress``)."""

from __future__ import annotations

import math
import time
from typing import Any

from ray.tune import Callback

from raystudy.platform.execution.progress import (
    ACTIVE,
    PIPE_HEARTBEAT_S,
    PIPE_MIN_INTERVAL_S,
    PREFIX,
    TERMINAL_REFRESH_S,
    Screen,
)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _number(value: float) -> str:
    return f"{value:.4g}"


def _params(params: dict[str, Any]) -> str:
    """``lr=0.01, name=adamw``: each key's last part where that names it alone."""
    short = {key: key.rsplit(".", 1)[-1] for key in params}
    clash = {name for name in short.values() if list(short.values()).count(name) > 1}
    return ", ".join(f"{key if short[key] in clash else short[key]}={value}"
                     for key, value in params.items())


class ProgressView(Callback):
    """Counts, best trial, elapsed and remaining time: a live line or plain lines."""

    def __init__(self, total: int, metric: str, mode: str) -> None:
        self.total = total
        self.metric = metric
        self.mode = mode
        self.started = time.time()
        self.last_draw = 0.0
        self.last_done = -1

    def __getstate__(self) -> dict[str, Any]:  # Tune pickles its callbacks with the run
        return {"total": self.total, "metric": self.metric, "mode": self.mode}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    @property
    def screen(self) -> Screen | None:
        return ACTIVE["screen"]

    # -------------------------------------------------------------- Tune hooks
    def on_step_end(self, iteration: int, trials: list[Any], **info: Any) -> None:
        ACTIVE.update(view=self, trials=trials)
        if self.screen is not None:
            self._draw(trials, force=False)

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        where = getattr(trial, "path", None)  # the trial's folder in the run folder
        where = f"{where}/error.txt" if where else getattr(trial, "error_file", "")
        if self.screen is not None:
            self.screen.print(f"{PREFIX} trial {trial.trial_id} failed; details in {where}")

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        ACTIVE.update(view=self, trials=trials)
        if self.screen is not None:
            self.screen.close()

    # -------------------------------------------------------------- the numbers
    def counts(self, trials: list[Any]) -> dict[str, int]:
        """finished / diverged / failed / running / pending over ``self.total`` trials."""
        counts = dict.fromkeys(("finished", "diverged", "failed", "running", "pending"), 0)
        for trial in trials:
            status = trial.status
            if status == "TERMINATED":
                diverged = (trial.last_result or {}).get("diverged")
                counts["diverged" if diverged else "finished"] += 1
            elif status == "ERROR":
                counts["failed"] += 1
            elif status == "RUNNING":
                counts["running"] += 1
            else:
                counts["pending"] += 1
        counts["pending"] += max(0, self.total - len(trials))  # not yet created
        return counts

    def best(self, trials: list[Any]) -> tuple[float, dict[str, Any]] | None:
        """The best last value of the primary metric over trials that reported it."""
        best = None
        for trial in trials:
            value = (trial.last_result or {}).get(self.metric)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                continue
            if best is None or (value < best[0] if self.mode == "min" else value > best[0]):
                best = (float(value), dict(trial.evaluated_params or {}))
        return best

    def remaining_s(self, trials: list[Any], counts: dict[str, int]) -> float | None:
        """Pending work (mean finished duration each) spread over the running slots."""
        durations = [float((t.last_result or {}).get("time_total_s", 0.0)) for t in trials
                     if t.status == "TERMINATED"]
        if not durations:
            return None
        mean = sum(durations) / len(durations)
        now = time.time()
        running_left = sum(max(0.0, mean - (now - (t.start_time or now))) for t in trials
                           if t.status == "RUNNING" and getattr(t, "start_time", None))
        slots = max(1, counts["running"])
        return (counts["pending"] * mean + running_left) / slots

    def trial_progress(self, trials: list[Any]) -> str:
        """A lone running trial's own progress, from the cadence keys it reports."""
        running = [t for t in trials if t.status == "RUNNING"]
        if len(running) != 1:
            return ""
        result = running[0].last_result or {}
        step, total = result.get("progress/step"), result.get("progress/total")
        if not step or not total:
            return ""
        return f"; trial {running[0].trial_id}: step {int(step)}/{int(total)}"

    def line(self, trials: list[Any]) -> tuple[str, int]:
        counts = self.counts(trials)
        done = counts["finished"] + counts["diverged"] + counts["failed"]
        parts = [f"{done}/{self.total} done", f"{counts['running']} running",
                 f"{counts['pending']} pending"]
        parts += [f"{counts[k]} {k}" for k in ("failed", "diverged") if counts[k]]
        text = ", ".join(parts)
        best = self.best(trials)
        if best is not None:
            params = _params(best[1])
            text += f"; best {self.metric} {_number(best[0])}" + (f" ({params})" if params else "")
        text += f"; {_duration(time.time() - self.started)} elapsed"
        left = self.remaining_s(trials, counts)
        if left is not None and done < self.total:
            text += f", ~{_duration(left)} left"
        return text + self.trial_progress(trials), done

    def _draw(self, trials: list[Any], force: bool) -> None:
        now = time.time()
        if self.screen.live:
            if force or now - self.last_draw >= TERMINAL_REFRESH_S:
                text, done = self.line(trials)
                self.screen.status(done, self.total, text)
                self.last_draw = now
            return
        since = now - self.last_draw
        if not force and since < PIPE_MIN_INTERVAL_S:
            return
        text, done = self.line(trials)
        moved = done != self.last_done
        if force or (moved and since >= PIPE_MIN_INTERVAL_S) or since >= PIPE_HEARTBEAT_S:
            self.screen.print(f"{PREFIX} {text}")
            self.last_draw, self.last_done = now, done

    def summary(self, trials: list[Any], wall_s: float) -> str:
        """The closing line: counts, best trial, wall time."""
        counts = self.counts(trials)
        counts["unfinished"] = self.total - sum(counts[k] for k in
                                                ("finished", "failed", "diverged"))
        parts = [f"{counts['finished']} finished"]
        parts += [f"{counts[k]} {k}" for k in ("failed", "diverged", "unfinished") if counts[k]]
        text = f"{PREFIX} {self.total} trial(s): {', '.join(parts)}"
        best = self.best(trials)
        if best is not None:
            params = _params(best[1])
            text += f"; best {self.metric} {_number(best[0])}" + (f" ({params})" if params else "")
        return text + f"; wall time {_duration(wall_s)}"


