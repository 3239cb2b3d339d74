"""What a person sees while a run or sweep goes: one live progress view, the full log in
the run folder.

``driver_log(verbose)`` sends everything the driver prints (Ray's start-up lines, Tune's
tables and trial boxes, Ray's log lines, forwarded worker output, warnings) to
``logs/driver.log`` in the run folder once it exists (``attach``); the terminal keeps
raystudy's own lines (they start ``raystudy:``) and the progress view, or everything
with ``--verbose``.

``ProgressView`` is a Tune callback. On a terminal it redraws one line (tqdm): trials
done / running / pending / failed / diverged, the best value of the primary metric so
far with its parameters, elapsed time and an estimate of the rest, and, while a single
trial runs, that trial's own progress (the cadence's step out of its total). On a pipe
(a CI log, ``raystudy submit``'s job log, ``| tee``) it prints a plain line when a trial
ends, at most every 10 s, and otherwise every 60 s while something moves.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from ray.tune import Callback

PREFIX = "raystudy:"
_ACTIVE: dict[str, Any] = {"screen": None, "view": None, "trials": []}
"""The driver's current screen, and the view Tune calls with its trials. A resumed sweep's
view is Tune's unpickled copy from the first run, so it finds the screen here."""
PIPE_MIN_INTERVAL_S = 10.0
PIPE_HEARTBEAT_S = 60.0
TERMINAL_REFRESH_S = 0.5


class _Tee(io.TextIOBase):
    """A stream that writes every line to the log and the chosen ones to the terminal."""

    def __init__(self, log: TextIO, verbose: bool, view: _Screen) -> None:
        self.log, self.verbose, self.view = log, verbose, view
        self.partial = ""
        self.lock = threading.RLock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self.lock:
            self.log.write(text)
            self.log.flush()
            lines = (self.partial + text).split("\n")
            self.partial = lines.pop()
            for line in lines:
                if self.verbose or line.startswith(PREFIX):
                    self.view.print(line)
        return len(text)

    def flush(self) -> None:
        self.log.flush()

    def isatty(self) -> bool:
        return False


class _Screen:
    """The terminal: plain lines, and on a TTY one live line kept below them."""

    def __init__(self, terminal: TextIO, live: bool) -> None:
        self.terminal = terminal
        self.live = live
        self.bar: Any = None
        self.lock = threading.RLock()

    def print(self, line: str) -> None:
        with self.lock:
            if self.bar is not None:
                self.bar.clear()
            self.terminal.write(line + "\n")
            self.terminal.flush()
            if self.bar is not None:
                self.bar.refresh()

    def status(self, done: int, total: int, text: str) -> None:
        with self.lock:
            if self.bar is None:
                from tqdm import tqdm

                self.bar = tqdm(total=total, file=self.terminal, dynamic_ncols=True,
                                leave=False, bar_format="{bar:16} {desc}")
            self.bar.total = max(total, done)
            self.bar.n = done
            self.bar.set_description_str(text, refresh=False)
            self.bar.refresh()

    def close(self) -> None:
        with self.lock:
            if self.bar is not None:
                self.bar.close()
                self.bar = None


class DriverLog:
    """Where the driver's output goes while a command runs (see ``driver_log``)."""

    def __init__(self, screen: _Screen, out: _Tee, err: _Tee) -> None:
        self.screen, self.out, self.err = screen, out, err
        self.path: Path | None = None

    def attach(self, path: Path) -> None:
        """From now on (and what came before) into ``path``, appended."""
        path.parent.mkdir(parents=True, exist_ok=True)
        log = open(path, "a", buffering=1, encoding="utf-8", errors="replace")
        with self.out.lock, self.err.lock:
            log.write(self.out.log.getvalue())
            self.out.log = self.err.log = log
        self.path = path


@contextlib.contextmanager
def driver_log(verbose: bool) -> Iterator[DriverLog]:
    """Route the driver's output: all of it to the log (held in memory until
    ``attach(path)``; on an error before that, shown on stderr so nothing is lost),
    raystudy's lines (or, verbose, everything) to the terminal."""
    terminal_out, terminal_err = sys.stdout, sys.stderr
    screen = _Screen(terminal_out, live=_is_terminal(terminal_out) and not verbose)
    early = io.StringIO()
    out = _Tee(early, verbose, screen)
    err = _Tee(early, verbose, screen if screen.live else _Screen(terminal_err, live=False))
    err.lock = out.lock  # one log, one order
    log = DriverLog(screen, out, err)
    handlers = _stream_handlers(terminal_out, terminal_err)
    previous = [(handler, handler.stream) for handler in handlers]
    _ACTIVE.update(screen=screen, view=None, trials=[])
    sys.stdout, sys.stderr = out, err
    for handler in handlers:
        handler.setStream(err if handler.stream is terminal_err else out)
    failed = True
    try:
        yield log
        failed = False
    finally:
        screen.close()
        _ACTIVE["screen"] = None
        for stream in (out, err):
            if stream.partial:
                stream.write("\n")
        sys.stdout, sys.stderr = terminal_out, terminal_err
        for handler, stream in previous:
            handler.setStream(stream)
        if log.path is None:
            if failed and not verbose:  # what Ray said before it failed
                terminal_err.write("".join(line + "\n" for line in
                                           early.getvalue().splitlines()
                                           if not line.startswith(PREFIX)))
        else:
            out.log.close()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _stream_handlers(*streams: TextIO) -> list[logging.StreamHandler]:
    """Logging handlers writing to ``streams`` (Ray's own loggers hold sys.stderr)."""
    loggers = [logging.getLogger(), *(logging.getLogger(name)
                                      for name in list(logging.root.manager.loggerDict))]
    found = []
    for logger in loggers:
        for handler in getattr(logger, "handlers", []):
            if (isinstance(handler, logging.StreamHandler)
                    and not isinstance(handler, logging.FileHandler)
                    and any(handler.stream is s for s in streams) and handler not in found):
                found.append(handler)
    return found


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
    def screen(self) -> _Screen | None:
        return _ACTIVE["screen"]

    # -------------------------------------------------------------- Tune hooks
    def on_step_end(self, iteration: int, trials: list[Any], **info: Any) -> None:
        _ACTIVE.update(view=self, trials=trials)
        if self.screen is not None:
            self._draw(trials, force=False)

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        where = getattr(trial, "path", None)  # the trial's folder in the run folder
        where = f"{where}/error.txt" if where else getattr(trial, "error_file", "")
        if self.screen is not None:
            self.screen.print(f"{PREFIX} trial {trial.trial_id} failed; details in {where}")

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        _ACTIVE.update(view=self, trials=trials)
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


def closing_line(wall_s: float) -> str | None:
    """The summary of the sweep Tune just ran (None if no view saw it)."""
    view = _ACTIVE["view"]
    return view.summary(_ACTIVE["trials"], wall_s) if view is not None else None
