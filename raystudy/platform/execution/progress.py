"""What a person sees while a run or sweep goes: one live progress view, the full log in
the run folder.

``driver_log(verbose)`` sends everything the driver prints (Ray's start-up lines, Tune's
tables and trial boxes, Ray's log lines, forwarded worker output, warnings) to
``logs/driver.log`` in the run folder once it exists (``attach``); the terminal keeps
raystudy's own lines (they start ``raystudy:``) and the progress view, or everything
with ``--verbose``.

``ProgressView`` (``progress_view``) is a Tune callback. On a terminal it redraws one line
(tqdm): trials done / running / pending / failed / diverged, the best value of the primary metric so
far with its parameters, elapsed time and an estimate of the rest, and, while a single
trial runs, that trial's own progress (the cadence's step out of its total). On a pipe
(a CI log, ``raystudy submit``'s job log, ``| tee``) it prints a plain line when a trial
ends, at most every 10 s, and otherwise every 60 s while something moves.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

PREFIX = "raystudy:"
ACTIVE: dict[str, Any] = {"screen": None, "view": None, "trials": []}
"""The driver's current screen, and the view Tune calls with its trials. A resumed sweep's
view is Tune's unpickled copy from the first run, so it finds the screen here."""
PIPE_MIN_INTERVAL_S = 10.0
PIPE_HEARTBEAT_S = 60.0
TERMINAL_REFRESH_S = 0.5


class _Tee(io.TextIOBase):
    """A stream that writes every line to the log and the chosen ones to the terminal."""

    def __init__(self, log: TextIO, verbose: bool, view: Screen) -> None:
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


class Screen:
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

    def __init__(self, screen: Screen, out: _Tee, err: _Tee) -> None:
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
    screen = Screen(terminal_out, live=_is_terminal(terminal_out) and not verbose)
    early = io.StringIO()
    out = _Tee(early, verbose, screen)
    err = _Tee(early, verbose, screen if screen.live else Screen(terminal_err, live=False))
    err.lock = out.lock  # one log, one order
    log = DriverLog(screen, out, err)
    handlers = _stream_handlers(terminal_out, terminal_err)
    previous = [(handler, handler.stream) for handler in handlers]
    ACTIVE.update(screen=screen, view=None, trials=[])
    sys.stdout, sys.stderr = out, err
    for handler in handlers:
        handler.setStream(err if handler.stream is terminal_err else out)
    failed = True
    try:
        yield log
        failed = False
    finally:
        screen.close()
        ACTIVE["screen"] = None
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


def closing_line(wall_s: float) -> str | None:
    """The summary of the sweep Tune just ran (None if no view saw it)."""
    view = ACTIVE["view"]
    return view.summary(ACTIVE["trials"], wall_s) if view is not None else None
