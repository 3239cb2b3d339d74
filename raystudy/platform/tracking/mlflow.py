"""``--mlflow [URI]``: every run of every study in one MLflow tracking store.

The default store is ``RUN_ROOT/mlruns`` (``file:`` beside the run folders of one
``--storage``), shared by every run under it, so MLflow's own compare view works across
sweeps. One MLflow experiment per study (its name); one MLflow run per trial, named
``RUN/TRIAL``, with the trial's whole config as params (profile, overrides and its
swept values), its metrics over steps, and the tags ``raystudy.run`` (the run folder's
name) and ``raystudy.study``; and, when the report is written, one more MLflow run
``RUN (report)`` holding the report (report.md/html, summary.json, figures) as
artifacts and each claim's verdict as a tag. On object storage the store must be named
(``--mlflow http://mlflow:5000``, or ``MLFLOW_TRACKING_URI``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from raystudy.contract import storage
from raystudy.errors import UserError

DEFAULT = "default"
"""``--mlflow`` without a URI: ``file:RUN_ROOT/mlruns``."""


def tracking_uri(setting: str | bool | None, root: str) -> str | None:
    """The tracking URI a run logs to (None: no MLflow)."""
    if not setting:
        return None
    if setting is not True and setting != DEFAULT:
        return str(setting)
    if storage.is_remote(root):
        uri = os.environ.get("MLFLOW_TRACKING_URI")
        if not uri:
            raise UserError("--mlflow with --storage on object storage needs a tracking "
                            "server: --mlflow http://HOST:5000 (or MLFLOW_TRACKING_URI)")
        return uri
    # MLflow 3 keeps its file store in maintenance mode behind this switch; the file store
    # needs no server and no database, which is what an offline run folder wants.
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    return f"file:{Path(root) / 'mlruns'}"


def require_mlflow() -> None:
    try:
        import mlflow  # noqa: F401
    except ImportError:
        raise UserError("--mlflow needs mlflow: pip install 'raystudy[tracking]' "
                        "(or mlflow-skinny)") from None


def callback(uri: str, study: str, run_name: str, base_config: dict[str, Any]) -> Any:
    """The Tune callback that logs each trial as an MLflow run (see the module docstring)."""
    from ray.air.integrations.mlflow import MLflowLoggerCallback

    class TrialRuns(MLflowLoggerCallback):
        def log_trial_start(self, trial: Any) -> None:
            if trial not in self._trial_runs:
                tags = {**self.tags, "trial_name": str(trial), "raystudy.trial": trial.trial_id}
                run = self.mlflow_util.start_run(tags=tags,
                                                 run_name=f"{run_name}/{trial.trial_id}")
                self._trial_runs[trial] = run.info.run_id
                self.mlflow_util.log_params(run_id=self._trial_runs[trial],
                                            params_to_log={**base_config, **trial.config})

    return TrialRuns(tracking_uri=uri, experiment_name=study,
                     tags={"raystudy.run": run_name, "raystudy.study": study})


def log_report(uri: str, study: str, run_name: str, report_dir: Path,
               summary: dict[str, Any]) -> None:
    """The run's report as an MLflow run of the study's experiment (artifacts and claims)."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    experiment = mlflow.set_experiment(study)
    tags = {"raystudy.run": run_name, "raystudy.study": study, "raystudy.kind": "report"}
    for index, claim in enumerate(summary.get("claims", [])):
        tags[f"claim.{index}"] = f"{claim['verdict']}: {claim['statement']}"[:5000]
    with mlflow.start_run(experiment_id=experiment.experiment_id,
                          run_name=f"{run_name} (report)", tags=tags):
        config = summary.get("config") or {}
        mlflow.log_params({k: str(v)[:500] for k, v in config.items()})
        for name in ("report.md", "report.html", "summary.json", "trials.csv"):
            if (report_dir / name).exists():
                mlflow.log_artifact(str(report_dir / name))
        if (report_dir / "figures").is_dir():
            mlflow.log_artifacts(str(report_dir / "figures"), artifact_path="figures")
