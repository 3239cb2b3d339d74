"""Next-action prediction in spreadsheets, scored online by the sheet state it produces:
raystudy's reading of NAPE (Agrawal, Le, Gulwani & Verbruggen, "A Benchmark and Framework
for Evaluating Next Action Predictions in Spreadsheets", arXiv 2606.13802, ICML 2026), on
generated sheets and trajectories (NAPE's 52 sequences, code and acceptance rule are not
public).

``actions.py`` (the 9 kinds and the ``KIND | TARGET | VALUE`` lines), ``state.py`` (the
sheet state, merges as Excel and openpyxl keep them), ``online.py`` (the online loop,
state-based acceptance, triggers), ``generator.py`` (generated sheets and the user
profiles' trajectories), ``predictors.py`` and ``transformer.py`` (repeat, fill_pattern,
ngram, transformer, oracle), ``metrics.py`` (pooled rates, offline accuracy) and
``xlsx.py`` (trajectory files; the same actions through openpyxl).
"""

from .actions import KINDS, Action, format_action, parse_action
from .factory import make_predictor
from .generator import PROFILES, generate_trajectory, is_monotone
from .metrics import offline_accuracy, summarize
from .online import TRIGGERS, OnlineResult, accepts, make_trigger, online_evaluate
from .predictors import PREDICTORS, action_tokens
from .state import DEFAULTS, PROPS, SheetState, apply_actions
from .xlsx import read_trajectories, read_xlsx, write_trajectory, write_xlsx, xlsx_mismatches

__all__ = ["DEFAULTS", "KINDS", "PREDICTORS", "PROFILES", "PROPS", "TRIGGERS", "Action",
           "OnlineResult", "SheetState", "accepts", "action_tokens", "apply_actions",
           "format_action", "generate_trajectory", "is_monotone", "make_predictor",
           "make_trigger", "offline_accuracy", "online_evaluate", "parse_action",
           "read_trajectories", "read_xlsx", "summarize", "write_trajectory", "write_xlsx",
           "xlsx_mismatches"]
