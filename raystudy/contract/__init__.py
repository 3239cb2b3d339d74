"""The study contract: everything a study may import, and nothing else (no Ray).

``Study[C]`` describes a study over its frozen config class ``C`` (train loop, metrics,
``analyze`` over the ``RunResults`` of a run, whose ``Analysis`` states the paper's
``Claim``s, the ``DataCommand``s it adds to ``raystudy data``); ``TrialContext`` and
``Cadence`` are what its loop sees, ``LocalContext`` runs a loop without Ray. The typed
field helpers (``PositiveInt``, ``Fraction``, ``Range``, ``parse_spec``) declare a config
field's bounds; the data helpers (``require_file``, ``open_npy``, ``storage``,
``check_writable``, ``is_disk_full``, ``bounded``) and ``save_figure`` serve readers,
data commands and analyses. ``raystudy/__init__.py`` re-exports all of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raystudy.contract import storage
from raystudy.contract.data import (
    bounded,
    check_writable,
    describe_os_error,
    is_disk_full,
    is_remote,
    missing_modules,
    open_hdf5,
    open_npy,
    require_dir,
    require_extra,
    require_file,
    require_keys,
    sample_rows,
)
from raystudy.contract.fields import (
    Fraction,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Range,
    SpecTerm,
    parse_spec,
)
from raystudy.contract.figures import save_figure
from raystudy.contract.lazy import lazy_study
from raystudy.contract.results import RunResults, TrialRecord, by_seed, mean_metric, paired
from raystudy.contract.study import (
    Analysis,
    Cadence,
    Claim,
    DataCommand,
    Metric,
    Precondition,
    Study,
    Table,
    TrialContext,
    Verdict,
)
from raystudy.errors import ConfigError, DataError, MissingDataError, UserError

if TYPE_CHECKING:
    from raystudy.contract.context import LocalContext as LocalContext

# LocalContext is left out of __all__ (it is built on first access, below: it imports
# torch), so `from raystudy.contract import *` stays light; ask for it by name.
__all__ = [
    "Analysis", "Cadence", "Claim", "DataCommand", "Metric", "Precondition", "RunResults",
    "Study", "Table", "TrialContext", "TrialRecord", "Verdict",
    # errors a user can cause (one line, exit code 2)
    "ConfigError", "DataError", "MissingDataError", "UserError",
    # typed config fields, checked by the config layer with the key named
    "Fraction", "NonNegativeFloat", "NonNegativeInt", "PositiveFloat", "PositiveInt", "Range",
    "SpecTerm", "parse_spec",
    # data helpers: readers, data commands, analyses
    "bounded", "check_writable", "describe_os_error", "is_disk_full", "is_remote", "open_hdf5",
    "missing_modules", "open_npy", "require_dir", "require_extra", "require_file", "require_keys",
    "sample_rows", "save_figure", "lazy_study",
    "storage",
    # reading trials in an analysis: per seed, paired over seeds, means of finite values
    "by_seed", "mean_metric", "paired",
]


def __getattr__(name: str) -> Any:
    if name == "LocalContext":  # imports torch: only when asked for
        from raystudy.contract.context import LocalContext

        return LocalContext
    raise AttributeError(f"module 'raystudy.contract' has no attribute {name!r}")
