"""Every sweep, live in optuna-dashboard: a Tune callback that mirrors trials into an
Optuna study in a real database (SQLite ``optuna.db`` in the run folder by default, or
any SQLAlchemy URL Optuna accepts, e.g. PostgreSQL on a cluster's head node).

A trial appears when it starts (RUNNING) with its parameters and their distributions
from the space file; each report adds an intermediate value of the primary metric at
its ``training_iteration``; it ends COMPLETE with the final primary metric, FAIL with
its error, or PRUNED when the scheduler stopped it early. The other reported metrics,
``diverged`` and the Tune trial id go into user attributes. The study's direction is
the primary metric's mode, its name the run's name.

With ``--search optuna`` the searcher owns the trials (``OptunaSearch`` on the same
storage and study): the mirror only adds the user attributes, so there is one study and
no duplicate trial. On ``--resume`` a restarted trial continues the Optuna trial that
carries its Tune id; finished trials are never added again.
"""

from __future__ import annotations

import functools
import math
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray.tune import Callback
from ray.tune.schedulers import ASHAScheduler
from ray.tune.search.optuna import OptunaSearch

from raystudy.platform.runs.results import read_error
from raystudy.platform.tracking.optuna_store import (  # noqa: F401 (re-exported)
    DEFAULT_DB,
    TUNE_ID,
    _number,
    open_storage,
    result_attrs,
    shown_url,
    storage_url,
)

_FLUSH_S = 30.0  # a running trial's user attributes are refreshed at most this often
PRUNED: set[str] = set()  # Tune trial ids the scheduler stopped before their end


class PruningASHA(ASHAScheduler):
    """ASHA that records which trials it stopped early (before ``max_t``), so the
    Optuna study can mark them PRUNED rather than COMPLETE."""

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        decision = super().on_trial_result(tune_controller, trial, result)
        if decision == self.STOP and result.get(self._time_attr, 0) < self._max_t:
            PRUNED.add(trial.trial_id)
        return decision


def _never_breaks_the_sweep(hook: Callable) -> Callable:
    """The mirror is an addition: a database error is said once and the sweep goes on."""

    @functools.wraps(hook)
    def guarded(self: OptunaMirror, *args: Any, **kwargs: Any) -> None:
        try:
            hook(self, *args, **kwargs)
        except Exception as exc:
            if not self._warned:
                self._warned = True
                print(f"raystudy: warning: the optuna-dashboard mirror stopped writing to "
                      f"{shown_url(self.url)}: {type(exc).__name__}: {str(exc)[:200]}",
                      file=sys.stderr)

    return guarded


class RaystudyOptunaSearch(OptunaSearch):
    """Ray's OptunaSearch, but each Optuna trial carries its Tune trial id (so the mirror
    finds it, also after a resume), a trial the scheduler stopped early ends PRUNED
    (Ray's marks it COMPLETE with its last value), and a report without the primary
    metric is skipped (Ray's raises KeyError and ends the sweep)."""

    def suggest(self, trial_id: str) -> dict | None:
        config = super().suggest(trial_id)
        if trial_id in self._ot_trials:
            self._ot_trials[trial_id].set_user_attr(TUNE_ID, trial_id)
        return config

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if self.metric in result:  # a report without the primary metric adds no value
            super().on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict | None = None,
                          error: bool = False) -> None:
        if trial_id in self._ot_trials and trial_id not in self._completed_trials:
            for key, value in result_attrs(result or {}).items():  # before tell: then frozen
                self._ot_trials[trial_id].set_user_attr(key, value)
        diverged = bool((result or {}).get("diverged"))
        if error or diverged or trial_id not in PRUNED or trial_id in self._completed_trials:
            super().on_trial_complete(trial_id, result, error)
            return
        from optuna.trial import TrialState

        self._ot_study.tell(self._ot_trials[trial_id], state=TrialState.PRUNED)
        self._completed_trials.add(trial_id)


class OptunaMirror(Callback):
    """Mirror a Tune run into an Optuna study; see the module docstring."""

    def __init__(self, url: str, study_name: str, metric: str, mode: str,
                 distributions: dict[str, Any], searcher_owned: bool = False) -> None:
        self.url, self.study_name, self.metric, self.mode = url, study_name, metric, mode
        self.distributions = distributions
        self.searcher_owned = searcher_owned  # --search optuna: the searcher makes trials
        self._storage = None
        self._study_id: int | None = None
        self._ids: dict[str, int] = {}  # Tune trial id -> Optuna storage trial id
        self._ended: set[int] = set()  # Optuna trials no longer RUNNING
        self._flushed: dict[str, float] = {}
        self._warned = False

    def __getstate__(self) -> dict[str, Any]:  # Tune pickles callbacks with the run
        state = dict(self.__dict__)
        state.update(_storage=None, _study_id=None, _ids={}, _ended=set(), _flushed={},
                     _warned=False)
        return state

    # ------------------------------------------------------------------ storage
    @_never_breaks_the_sweep
    def setup(self, **info: Any) -> None:
        self._connect()

    def _connect(self) -> None:
        if self._storage is not None:
            return
        import optuna

        self._storage = open_storage(self.url)
        direction = "minimize" if self.mode == "min" else "maximize"
        study = optuna.create_study(storage=self._storage, study_name=self.study_name,
                                    direction=direction, load_if_exists=True)
        self._study_id = study._study_id
        with warnings.catch_warnings():  # experimental in Optuna: the dashboard's axis label
            warnings.simplefilter("ignore")
            study.set_metric_names([self.metric])
        self._refresh()

    def _refresh(self) -> None:
        from optuna.trial import TrialState

        for frozen in self._storage.get_all_trials(self._study_id, deepcopy=False):
            if TUNE_ID in frozen.user_attrs:
                self._ids[frozen.user_attrs[TUNE_ID]] = frozen._trial_id
                if frozen.state != TrialState.RUNNING:
                    self._ended.add(frozen._trial_id)

    def _trial_id(self, trial: Any) -> int | None:
        """The Optuna trial of a Tune trial: ours, the searcher's, or a new one."""
        self._connect()
        tune_id = trial.trial_id
        if tune_id not in self._ids and self.searcher_owned:
            self._refresh()  # the searcher has just asked Optuna for this trial
        if tune_id in self._ids or self.searcher_owned:
            return self._ids.get(tune_id)
        from optuna.trial import TrialState, create_trial

        swept = {k: d for k, d in self.distributions.items() if k in trial.config}
        template = create_trial(  # params, distributions and the Tune id in one write
            state=TrialState.RUNNING, params={k: trial.config[k] for k in swept},
            distributions=swept, user_attrs={TUNE_ID: tune_id})
        optuna_id = self._storage.create_new_trial(self._study_id, template_trial=template)
        self._ids[tune_id] = optuna_id
        return optuna_id

    def _running(self, optuna_id: int) -> bool:
        return optuna_id not in self._ended

    def _attrs(self, optuna_id: int, result: dict[str, Any]) -> None:
        if self.searcher_owned:
            return  # the searcher writes them before it tells Optuna the end
        for key, value in result_attrs(result).items():
            self._storage.set_trial_user_attr(optuna_id, key, value)

    # ------------------------------------------------------------------ Tune hooks
    @_never_breaks_the_sweep
    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._trial_id(trial)
        self._flushed[trial.trial_id] = time.monotonic()

    @_never_breaks_the_sweep
    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict,
                        **info: Any) -> None:
        optuna_id = self._trial_id(trial)
        if optuna_id is None or not self._running(optuna_id):
            return
        value = _number(result.get(self.metric))
        step = int(result.get("training_iteration", 0))
        if not self.searcher_owned and value is not None and math.isfinite(value):
            self._storage.set_trial_intermediate_value(optuna_id, step, value)
        now = time.monotonic()
        if now - self._flushed.get(trial.trial_id, 0.0) >= _FLUSH_S:
            self._flushed[trial.trial_id] = now
            self._attrs(optuna_id, result)

    @_never_breaks_the_sweep
    def on_trial_complete(self, iteration: int, trials: list, trial: Any,
                          **info: Any) -> None:
        self._end(trial, error=None)

    @_never_breaks_the_sweep
    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._end(trial, error=str(getattr(trial, "error_file", "") or "error"))

    def _end(self, trial: Any, error: str | None) -> None:
        from optuna.trial import TrialState

        optuna_id = self._trial_id(trial)
        if optuna_id is None:
            return
        if self.searcher_owned or not self._running(optuna_id):
            return  # the searcher tells Optuna itself
        result = dict(trial.last_result or {})
        self._attrs(optuna_id, result)
        if error is not None:
            self._storage.set_trial_user_attr(optuna_id, "error", _last_line(trial))
        value = _number(result.get(self.metric))
        if error is not None or value is None or math.isnan(value):
            self._storage.set_trial_state_values(optuna_id, TrialState.FAIL)
        elif trial.trial_id in PRUNED and not result.get("diverged"):
            self._storage.set_trial_state_values(optuna_id, TrialState.PRUNED)
        else:
            self._storage.set_trial_state_values(optuna_id, TrialState.COMPLETE, [value])
        self._ended.add(optuna_id)


def _last_line(trial: Any) -> str:
    path = getattr(trial, "error_file", None)
    return read_error(Path(path).parent, path) if path else "error"
