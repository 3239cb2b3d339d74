"""``raystudy run`` and ``raystudy sweep``: check the request, build the Tuner, run, report.

A run is a sweep of one trial, so both share one path: the same results layout,
checkpoints, divergence handling and resume. Everything a user can get wrong is
checked before any work starts, in this order: the request's own values, the study's
config and space, the study's data (on the driver, before Ray), the storage folder
(probe write, free space), the cluster address, and whether a trial can ever be placed.
Only then is the run folder created, with the request saved as ``raystudy.json``; a
start that fails before Tune wrote its experiment state removes the folder again.
Ctrl-C stops the sweep through Tune's own graceful stop (state saved, resumable),
prints the resume command and exits 130.

The steps are a :class:`~raystudy.platform.execution.plan.Plan`'s (``plan.py``); the
request and its ``--resume`` are ``request.py``'s, the Tuner ``tuner.py``'s.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from raystudy.errors import Interrupted, UserError
from raystudy.platform.execution.finish import finish_run
from raystudy.platform.execution.plan import Plan, placement_timeout
from raystudy.platform.execution.progress import driver_log
from raystudy.platform.execution.request import Options, Request
from raystudy.platform.execution.session import ray_session
from raystudy.platform.execution.tuner import make_tuner
from raystudy.platform.runs.rundir import has_run_state, trial_counts


def execute(request: Request, resume: bool = False, address: str | None = None,
            connect_timeout_s: float = 10.0, placement_timeout_s: float = 120.0,
            cluster_config: str | None = None, verbose: bool = False) -> Path | str:
    """Run (or resume) a run/sweep; returns the run folder (a path, or its URI on object
    storage) with its report.

    The terminal shows raystudy's lines and one progress view; everything Ray and Tune
    print goes to ``logs/driver.log`` in the run folder (and to the terminal too with
    ``verbose``).

    Attached to a cluster, trials that wait with no node able to hold them and none being
    added end the run after ``placement_timeout_s``; ``cluster_config`` (a launcher YAML)
    names the node types an autoscaler can add where the cluster does not say.
    """
    plan = Plan.validate(request, resume, Options(address, connect_timeout_s,
                                                  placement_timeout_s, cluster_config, verbose))
    if plan.request.in_process:
        from raystudy.platform.execution.inprocess import run_in_process

        return run_in_process(plan)
    plan.resolve_storage()
    plan.probe_cluster()
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", "1")  # a killed driver loses <= 1 s
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")  # every worker line into logs/driver.log
    # a report may leave the primary metric out (a timing block without the candidate it
    # names, another kind of trial in the same study): Tune's strict check would end the
    # sweep with a traceback; the report, the search and the Optuna mirror read what is there
    os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    # as it comes, none held back to be flushed on the terminal at shutdown
    try:
        with driver_log(verbose) as log, ray_session(address) as where, \
                _graceful_interrupt() as interrupt:
            plan.check_cluster_resources()
            plan.create_folder()
            plan.route_logs(log, where)
            disk, callbacks = plan.callbacks()

            def stopped() -> bool:
                return interrupt["interrupted"] or (disk is not None and disk.low())

            plan.fit(make_tuner(plan, callbacks), stopped)
            # measured again: on a resumed run Tune holds its own unpickled copy of the guard
            if disk is not None and disk.low():
                raise UserError(f"--storage {plan.root} is almost full (under "
                                f"{disk.min_free / 1024**2:.0f} MB free): the run stopped "
                                f"with its state saved; free space, then "
                                f"`{plan.request.resume_command()}`")
            if interrupt["interrupted"]:
                raise Interrupted(_progress(plan.run), plan.request.resume_command())
    except KeyboardInterrupt as exc:
        plan.clean_up_failed_start(exc)
        if has_run_state(plan.run):
            raise Interrupted(_progress(plan.run), plan.request.resume_command()) from None
        raise Interrupted("interrupted before any trial started", "") from None
    except BaseException as exc:
        plan.clean_up_failed_start(exc)
        timeout = placement_timeout(exc)
        if timeout is not None:
            raise timeout from None
        raise
    return finish_run(plan.request, plan.run, time.time() - plan.started)


@contextlib.contextmanager
def _graceful_interrupt() -> Iterator[dict[str, bool]]:
    """First Ctrl-C: Tune's own graceful stop (it saves the experiment state); its
    advice is silenced since we print the resume command ourselves. Second: stop now."""
    state = {"interrupted": False}
    if not _in_main_thread():
        yield state
        return

    def on_sigint(signum: int, frame: Any) -> None:
        tune_handler = signal.getsignal(signal.SIGUSR1)
        if state["interrupted"] or not callable(tune_handler):
            raise KeyboardInterrupt
        state["interrupted"] = True
        print("raystudy: stopping: saving the sweep's state (Ctrl-C again to quit now)",
              file=sys.stderr, flush=True)
        logging.getLogger("ray.tune").setLevel(logging.CRITICAL)
        tune_handler(signal.SIGUSR1, frame)  # sets Tune's "interrupted" event

    previous_env = os.environ.get("TUNE_DISABLE_SIGINT_HANDLER")
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, previous)
        if previous_env is None:
            os.environ.pop("TUNE_DISABLE_SIGINT_HANDLER", None)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _progress(run: Path | str) -> str:
    counts = trial_counts(run)
    return f"interrupted ({counts[0]} of {counts[1]} trials finished)" if counts else (
        "interrupted")
