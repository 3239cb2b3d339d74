"""raystudy: Ray-based platform for distributed machine-learning studies.

The public contract a study is written against::

    from raystudy import Analysis, Claim, LocalContext, Metric, Study, Table, TrialContext

``Study`` describes a study (config class, train loop, metrics, ``analyze`` over the
``RunResults`` of a run, whose ``Analysis`` states the paper's ``Claim``s with a verdict);
``TrialContext`` is what its loop sees; ``LocalContext`` runs a loop without Ray
(tests, notebooks). ``PositiveInt``, ``Fraction``, ``Range`` ... declare a config field's
bounds; ``parse_spec`` reads ``name/arg+name`` specs. See docs/writing-a-study.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from raystudy.platform.results import RunResults
from raystudy.platform.study import Analysis, Cadence, Claim, Metric, Study, Table, TrialContext

if TYPE_CHECKING:
    from raystudy.platform.context import LocalContext

__version__ = "0.1.0"
__all__ = [
    "Analysis", "Cadence", "Claim", "LocalContext", "Metric", "RunResults", "Study", "Table",
    "TrialContext",
    # typed config fields, checked by the config layer with the key named
    "Fraction", "NonNegativeFloat", "NonNegativeInt", "PositiveFloat", "PositiveInt", "Range",
    "SpecTerm", "parse_spec",
]


def __getattr__(name: str) -> Any:
    if name == "LocalContext":  # imports torch: only when asked for
        from raystudy.platform.context import LocalContext

        return LocalContext
    raise AttributeError(f"module 'raystudy' has no attribute {name!r}")
