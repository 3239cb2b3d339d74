"""Next-action prediction in spreadsheets, scored online by the sheet state it produces.

Paper: Agrawal, Le, Gulwani, Verbruggen, "A Benchmark and Framework for Evaluating Next
Action Predictions in Spreadsheets" (NAPE; arXiv 2606.13802, ICML 2026; napeval.github.io).
Claims tested here: judging a prediction by the sheet state it produces (not by an exact
match with the user's next action) credits more saved actions; abstention and cheap
triggers matter; context helps a learned predictor; the user's working order changes what
can be saved. NAPE's 52 sequences, its code and its acceptance rule are not public: the
evaluation is **raystudy's reading** (``raystudy.algorithms.spreadsheet``), on **generated**
sheets and trajectories of heuristic users, a stand-in for NAPE's curated sequences.

Launch::

    raystudy sweep spreadsheet_actions --profile quick                # 2 CPUs, minutes
    raystudy sweep spreadsheet_actions --profile quick --space claim  # 8 seeds
    raystudy run spreadsheet_actions --in-process --set predictor.name=ngram
    raystudy data make-spreadsheets sheets/ && raystudy run spreadsheet_actions \\
        --in-process --set data.source=file --set data.path=sheets/

A trial fits one predictor (``repeat``, ``fill_pattern``, ``ngram``, ``transformer``,
``oracle``) on training sheets whose seeds are disjoint from the test sheets', then plays
every test sheet through the online loop, fanned out over sheets with ``ctx.map``. Beside
its own setting it evaluates the in-trial conditions of ``eval.conditions`` on the same
sheets with the same fitted predictor (the exact-match acceptance rule, no abstention, the
cheap trigger, k = 4) and, for the transformer, the same model fitted at the shorter
contexts of ``predictor.contexts``: each claim's pair lies inside one trial. Each report
checkpoints the fitted predictors and the sheets done, so a resumed trial neither refits
nor replays them.
"""

from __future__ import annotations

import copy
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from raystudy import Metric, Study, TrialContext
from raystudy.algorithms.spreadsheet import (
    OnlineResult,
    apply_actions,
    make_predictor,
    make_trigger,
    offline_accuracy,
    online_evaluate,
    summarize,
    write_xlsx,
    xlsx_mismatches,
)
from raystudy.studies.spreadsheet_actions.analysis import analyze
from raystudy.studies.spreadsheet_actions.config import LEARNED, SpreadsheetActionsConfig
from raystudy.studies.spreadsheet_actions.data import check_data as check_sheets
from raystudy.studies.spreadsheet_actions.data import sheets

RATES = ("saved_rate", "net_saved_rate", "rejected_per_shown", "calls_per_user_action",
         "abstained_per_call")
"""The pooled rates of ``summarize`` reported per condition."""


# ----------------------------------------------------------------------------- predictors
def fit(config: SpreadsheetActionsConfig, train: list[Any]) -> dict[str, Any]:
    """The fitted predictors by key: ``main`` (None for the oracle, made per sheet),
    ``context@L`` for the transformer's further contexts, and ``repeat`` (the reference of
    N4's gate)."""
    p = config.predictor
    fitted: dict[str, Any] = {"repeat": make_predictor("repeat")}
    if p.name == "ngram":
        fitted["main"] = make_predictor("ngram", train=train, n=p.n, threshold=p.threshold)
    elif p.name == "transformer":
        for context in (p.context, *p.contexts):
            key = "main" if context == p.context else f"context@{context}"
            fitted[key] = make_predictor(
                "transformer", train=train, context=context, d_model=p.d_model,
                n_layers=p.n_layers, n_heads=p.n_heads, steps=p.steps,
                batch_size=p.batch_size, lr=p.lr, seed=config.run.seed, threshold=p.threshold)
    elif p.name == "oracle":
        fitted["main"] = None
    else:
        fitted["main"] = fitted["repeat"] if p.name == "repeat" else make_predictor(p.name)
    return fitted


def without_abstention(predictor: Any) -> Any:
    """A shallow copy of a learned predictor with threshold 0 (the same fitted model)."""
    unthresholded = copy.copy(predictor)
    unthresholded.threshold = 0.0
    return unthresholded


# ----------------------------------------------------------------------------- conditions
@dataclass(frozen=True)
class Condition:
    """One way of playing the test sheets: which fitted predictor, and the loop's options."""

    predictor: str
    k: int
    trigger: str
    every_n: int
    repredict: bool
    acceptance: str = "state"
    abstain: bool = True


def conditions(config: SpreadsheetActionsConfig, fitted: dict[str, Any]) -> dict[str, Condition]:
    """The trial's own setting (``""``) and its in-trial conditions, by metric prefix. A
    condition identical to the trial's own (the cheap trigger in a cheap trial, k = 4 at
    k = 4, no abstention at threshold 0) is left out."""
    e, p = config.eval, config.predictor
    own = Condition("main", e.k, e.trigger, e.every_n, e.repredict)
    out = {"": own}
    wanted = set(e.conditions)
    if "next_action" in wanted:
        out["next_action"] = Condition(**{**own.__dict__, "acceptance": "next_action"})
    if "no_abstain" in wanted and p.name in LEARNED and p.threshold > 0:
        out["no_abstain"] = Condition(**{**own.__dict__, "abstain": False})
    if "cheap" in wanted and e.trigger != "cheap":
        out["cheap"] = Condition(**{**own.__dict__, "trigger": "cheap"})
    if "k4" in wanted and e.k != 4:
        out["k4"] = Condition(**{**own.__dict__, "k": 4})
    for key in fitted:
        if key.startswith("context@"):
            out[key] = Condition(**{**own.__dict__, "predictor": key})
    return out


def play(fitted: dict[str, Any], condition: Condition, sheet: list[Any]) -> OnlineResult:
    """One sheet through the online loop under one condition."""
    predictor = fitted[condition.predictor]
    if predictor is None:
        predictor = make_predictor("oracle", trajectory=sheet)
    if not condition.abstain:
        predictor = without_abstention(predictor)
    trigger = make_trigger(condition.trigger, **(
        {"n": condition.every_n} if condition.trigger == "every_n" else {}))
    return online_evaluate(sheet, predictor, k=condition.k, trigger=trigger,
                           repredict=condition.repredict, acceptance=condition.acceptance)


def evaluate_sheet(item: tuple[dict[str, Any], dict[str, Condition], list[Any], bool]
                   ) -> dict[str, Any]:
    """Everything one test sheet contributes (run by ``ctx.map``, anywhere): its online
    results per condition, the seconds of the trial's own play, offline hits per fitted
    predictor, and the cells where openpyxl's replay differs from the state model."""
    fitted, plan, sheet, check_xlsx = item
    out: dict[str, Any] = {"online": {}, "positions": max(len(sheet) - 1, 0),
                           "kinds": Counter(action.kind for action in sheet)}
    for name, condition in plan.items():
        start = time.process_time()
        out["online"][name] = play(fitted, condition, sheet)
        if name == "":
            out["seconds"] = time.process_time() - start
    out["offline_hits"] = {
        key: offline_accuracy(predictor or make_predictor("oracle", trajectory=sheet),
                              [sheet]) * out["positions"]
        for key, predictor in fitted.items()}
    out["xlsx_mismatches"] = replay_mismatches(sheet) if check_xlsx else 0
    return out


def replay_mismatches(sheet: list[Any]) -> int:
    """Properties and merges in which openpyxl's replay of the sheet (saved, reloaded)
    differs from the state model's final state."""
    with tempfile.TemporaryDirectory(prefix="raystudy-sheet-") as folder:
        path = Path(folder) / "sheet.xlsx"
        write_xlsx(sheet, path)
        return xlsx_mismatches(apply_actions(sheet), path)


# ----------------------------------------------------------------------------- metrics
def metrics_of(done: list[dict[str, Any]], n_test: int) -> dict[str, float]:
    """The trial's metrics over the sheets played so far (rates pooled over sheets)."""
    out: dict[str, float] = {"eval/sheets": float(len(done)), "data/test_sheets": float(n_test)}
    for name in done[0]["online"]:
        prefix = f"eval/{name}/" if name else "eval/"
        results = [sheet["online"][name] for sheet in done]
        pooled = summarize(results)
        out.update({prefix + rate: pooled[rate] for rate in RATES})
        out[prefix + "unreached"] = float(sum(not r.reached for r in results))
    own = [sheet["online"][""] for sheet in done]
    calls = sum(r.calls for r in own)
    out["eval/seconds_per_call"] = (sum(sheet["seconds"] for sheet in done) / calls
                                    if calls else 0.0)
    out["eval/actions"] = float(sum(r.length for r in own))
    positions = sum(sheet["positions"] for sheet in done)
    for key in done[0]["offline_hits"]:
        accuracy = sum(sheet["offline_hits"][key] for sheet in done) / max(positions, 1)
        name = {"main": "eval/offline_accuracy", "repeat": "ref/repeat/offline_accuracy"
                }.get(key, f"eval/{key}/offline_accuracy")
        out[name] = accuracy
    kinds: Counter[str] = Counter()
    saved: Counter[str] = Counter()
    for sheet, result in zip(done, own, strict=True):
        kinds.update(sheet["kinds"])
        saved.update(result.saved_by_kind)
    out.update({f"kind/{kind}/saved_rate": saved[kind] / n for kind, n in kinds.items()})
    out["eval/xlsx_mismatches"] = float(sum(sheet["xlsx_mismatches"] for sheet in done))
    return out


# ----------------------------------------------------------------------------- loop
def train_loop(config: SpreadsheetActionsConfig, ctx: TrialContext) -> None:
    torch.set_num_threads(config.run.threads)
    train, test = sheets(config.data, config.run.seed)
    state = ctx.load_checkpoint() or {}
    fitted = state["fitted"] if "fitted" in state else fit(config, train)
    plan = conditions(config, fitted)
    done: list[dict[str, Any]] = list(state.get("sheets", []))
    cadence = ctx.cadence(len(test), config.eval.sheets_per_report, 1)
    for step in cadence:
        if cadence.evaluates(step):
            done += ctx.map(evaluate_sheet, [(fitted, plan, test[i], config.eval.check_xlsx)
                                             for i in range(len(done), step)])
            ctx.report(metrics_of(done, len(test)),
                       checkpoint={"fitted": fitted, "sheets": done}, step=step)


def check_data(config: SpreadsheetActionsConfig) -> None:
    check_sheets(config.data)


STUDY = Study(
    name="spreadsheet_actions",
    description="next-action prediction in spreadsheets scored online by the sheet state "
                "it produces (NAPE), on generated sheets and trajectories",
    config_cls=SpreadsheetActionsConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/saved_rate", "max", "share of the user's actions saved by accepted "
               "suggestions (pooled over test sheets)"),
        Metric("eval/net_saved_rate", "max", "saved minus rejected suggestions, per action"),
        Metric("eval/rejected_per_shown", "min", "rejected suggestions per suggestion shown"),
        Metric("eval/calls_per_user_action", "min", "predictor calls per user action"),
        Metric("eval/offline_accuracy", "max", "exact next-action accuracy after every "
               "prefix of the user's own actions"),
    ),
    analyze=analyze,
    check_data=check_data,
)
