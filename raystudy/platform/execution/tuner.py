"""The Tune ``Tuner`` of a plan: restored from the run folder, or new with its search,
scheduler and callbacks.

The trainable (``trainable.py``) gets each trial's resources. ``--search grid`` and
``random`` are Tune's variant generator, with ``--max-concurrent`` as its own limit;
``optuna`` is the Optuna searcher on the dashboard's storage and study. ``--scheduler
asha`` is ASHA recording the trials it stops early (PRUNED in Optuna). Besides the
plan's callbacks, the trial index (``trial_index.py``: the run's ``trials.json``), the
Optuna mirror (optuna-dashboard) and, with ``--mlflow``, MLflow follow every trial.
``--resume`` restores Tune's saved state, or starts the folder afresh where none was
saved yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from raystudy.contract import storage
from raystudy.contract.study import Study
from raystudy.errors import DataError, UserError
from raystudy.platform.configuration.config import to_flat_dict
from raystudy.platform.execution.finish import mlflow_uri
from raystudy.platform.execution.trainable import make_trainable, resumable
from raystudy.platform.tracking.optuna_store import open_storage

if TYPE_CHECKING:
    from raystudy.platform.execution.plan import Plan
    from raystudy.platform.execution.request import Request


def make_tuner(plan: Plan, callbacks: list[Any]):
    """The Tuner of the plan: restored from the run folder, or new."""
    from ray import tune

    from raystudy.platform.configuration.registry import ship_study_files
    from raystudy.platform.execution.trial_index import TrialIndexCallback

    ship_study_files()
    request, study, run = plan.request, plan.study, plan.run
    trainable = tune.with_resources(
        resumable(make_trainable(study, plan.config, request.compute,
                                 storage.join(run, "train"))),
        request.compute.resources(),
    )
    # Tune parses a URI's query itself (pyarrow's from_uri; ray.air's URI keeps it on
    # parent/child paths), so storage_path and the restore path stay URIs.
    resume = plan.resume
    if resume and not _can_restore(run):
        print("raystudy: no Tune state saved yet in that folder; starting it afresh")
        resume = False
    if resume:
        try:
            return tune.Tuner.restore(run, trainable=trainable,
                                      resume_unfinished=True, resume_errored=False)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise DataError(f"--resume: cannot restore {run}: its Tune state is "
                            f"unreadable ({first[:200]})") from None
    return tune.Tuner(
        trainable,
        param_space=plan.param_space,
        tune_config=tune.TuneConfig(
            metric=study.primary.name,
            mode=study.primary.mode,
            search_alg=_search_alg(request, study, plan.optuna_url),
            scheduler=_scheduler(request, plan.sweep_defaults),
            num_samples=request.samples,
            max_concurrent_trials=request.max_concurrent if request.search == "optuna" else None,
            reuse_actors=study.reuse_actors and request.compute.workers == 0,
        ),
        run_config=tune.RunConfig(
            name=request.name,
            storage_path=plan.root,
            failure_config=tune.FailureConfig(
                max_failures=request.trial_max_failures, fail_fast=False
            ),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
            callbacks=[TrialIndexCallback(),
                       *_tracking_callbacks(request, study, plan.config, plan.params,
                                            plan.run_dir, plan.optuna_url),
                       *callbacks],
        ),
    )


def _can_restore(run: str) -> bool:
    """Tune's ``can_restore``; a store that cannot be read is one line."""
    from ray import tune

    try:
        return tune.Tuner.can_restore(run)
    except (OSError, ValueError) as exc:
        raise UserError(f"--resume: cannot read {run}: {str(exc).splitlines()[0]}") from None


def _search_alg(request: Request, study: Study, optuna_url: str | None):
    if request.search != "optuna":
        from ray.tune.search.basic_variant import BasicVariantGenerator

        # Tune ignores max_concurrent_trials (with a warning) when search_alg is a
        # generator like this one: the limit must be the generator's own.
        return BasicVariantGenerator(random_state=request.seed,
                                     max_concurrent=request.max_concurrent or 0)
    import optuna

    from raystudy.platform.tracking.optuna_mirror import RaystudyOptunaSearch

    return RaystudyOptunaSearch(  # the same storage and study as the dashboard mirror
        metric=study.primary.name,
        mode=study.primary.mode,
        sampler=optuna.samplers.TPESampler(seed=request.seed),
        storage=open_storage(optuna_url) if optuna_url else None,
        study_name=request.name,
    )


def _scheduler(request: Request, sweep_defaults: dict[str, Any]):
    if request.scheduler == "fifo":
        return None
    from raystudy.platform.tracking.optuna_mirror import PruningASHA

    asha = dict(sweep_defaults.get("asha") or {})
    return PruningASHA(
        time_attr="training_iteration",
        max_t=int(asha.get("max_t", 100)),
        grace_period=int(asha.get("grace_period", 1)),
        reduction_factor=float(asha.get("reduction_factor", 3)),
    )


def _tracking_callbacks(request: Request, study: Study, config: Any, params: dict[str, Any],
                        run_dir: Path, optuna_url: str | None) -> list[Any]:
    """The live Optuna study (optuna-dashboard) and, with --mlflow, MLflow."""
    callbacks: list[Any] = []
    if optuna_url:
        from raystudy.platform.configuration.spaces import optuna_distributions
        from raystudy.platform.tracking.optuna_mirror import OptunaMirror

        callbacks.append(OptunaMirror(
            optuna_url, request.name, study.primary.name, study.primary.mode,
            optuna_distributions(params, config), searcher_owned=request.search == "optuna"))
    uri = mlflow_uri(request)
    if uri is None:
        return callbacks
    from raystudy.platform.tracking import mlflow as tracking
    tracking.require_mlflow()
    return [*callbacks, tracking.callback(uri, study.name, request.name or "",
                                          to_flat_dict(config))]
