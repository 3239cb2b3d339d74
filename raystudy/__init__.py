"""raystudy: Ray-based platform for distributed machine-learning studies.

The public contract a study is written against::

    from raystudy import Analysis, Claim, LocalContext, Metric, Study, Table, TrialContext
    from raystudy import claims          # Claim rows from raystudy.algorithms.stats results

``Study`` describes a study (config class, train loop, metrics, ``analyze`` over the
``RunResults`` of a run, whose ``Analysis`` states the paper's ``Claim``s with a verdict,
and the ``DataCommand``s it adds to ``raystudy data``); ``TrialContext`` is what its loop
sees; ``LocalContext`` runs a loop without Ray (tests, notebooks). ``PositiveInt``,
``Fraction``, ``Range`` ... declare a config field's bounds; ``parse_spec`` reads
``name/arg+name`` specs. ``UserError`` and its kinds (``ConfigError``, ``DataError``,
``MissingDataError``) end a command with one line and exit code 2; ``check_writable``
and ``bounded`` serve data commands. See docs/writing-a-study.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raystudy.errors import ConfigError, DataError, MissingDataError, UserError
from raystudy.platform.cliargs import bounded
from raystudy.platform.config import (
    Fraction,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Range,
    SpecTerm,
    parse_spec,
)
from raystudy.platform.preflight import check_writable
from raystudy.platform.results import RunResults
from raystudy.platform.study import (
    Analysis,
    Cadence,
    Claim,
    DataCommand,
    Metric,
    Study,
    Table,
    TrialContext,
)

if TYPE_CHECKING:
    from raystudy import claims
    from raystudy.platform.context import LocalContext

__version__ = "0.1.0"
__all__ = [
    "Analysis", "Cadence", "Claim", "DataCommand", "LocalContext", "Metric", "RunResults",
    "Study", "Table", "TrialContext", "claims",
    # errors a user can cause (one line, exit code 2) and helpers of data commands
    "ConfigError", "DataError", "MissingDataError", "UserError", "bounded", "check_writable",
    # typed config fields, checked by the config layer with the key named
    "Fraction", "NonNegativeFloat", "NonNegativeInt", "PositiveFloat", "PositiveInt", "Range",
    "SpecTerm", "parse_spec",
]


def __getattr__(name: str) -> Any:
    if name == "LocalContext":  # imports torch: only when asked for
        from raystudy.platform.context import LocalContext

        return LocalContext
    if name == "claims":  # imports NumPy and SciPy: only when asked for
        import importlib

        return importlib.import_module("raystudy.claims")
    raise AttributeError(f"module 'raystudy' has no attribute {name!r}")
