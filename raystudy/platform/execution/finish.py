"""The end of a run, the same for a Ray sweep and an in-process run: the report written
(and logged to MLflow with ``--mlflow``), and the resume command when trials are left."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from raystudy.contract import storage
from raystudy.platform.runs.rundir import unfinished

if TYPE_CHECKING:
    from raystudy.platform.execution.request import Request


def mlflow_uri(request: Request) -> str | None:
    """Where ``--mlflow`` logs (None without it): see ``tracking``."""
    from raystudy.platform.tracking.mlflow import tracking_uri

    return tracking_uri(request.mlflow, storage.root(request.storage))


def finish_run(request: Request, run: str, elapsed: float) -> Path | str:
    """The report, in the run folder (on object storage: built from a local copy and
    uploaded back); its path or URI is printed."""
    from raystudy.platform.report.report import write_report_at

    report = write_report_at(run, wall_time_s=elapsed)
    print(f"raystudy: report written to {report}", flush=True)
    uri = mlflow_uri(request)
    if uri is not None:
        from raystudy.platform.runs.rundir import read_summary
        from raystudy.platform.tracking.mlflow import log_report

        summary = read_summary(run) or {}
        with storage.local_copy(run, recursive=True) as copy:
            log_report(uri, summary.get("study", request.study), request.name or "",
                       Path(copy), summary)
        print(f"raystudy: MLflow: experiment {summary.get('study', request.study)} at {uri}",
              flush=True)
    if unfinished(run):
        print(f"raystudy: some trials did not finish; continue with "
              f"`{request.resume_command()}`")
    return run if storage.is_remote(run) else Path(run)
