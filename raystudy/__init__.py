"""raystudy: Ray-based platform for distributed machine-learning studies.

The public contract a study is written against (``raystudy.contract``, re-exported)::

    from raystudy import Analysis, Claim, LocalContext, Metric, Study, Table, TrialContext
    from raystudy import claims          # Claim rows from raystudy.algorithms.stats results

``Study`` describes a study (config class, train loop, metrics, ``analyze`` over the
``RunResults`` of a run, whose ``Analysis`` states the paper's ``Claim``s with a verdict,
and the ``DataCommand``s it adds to ``raystudy data``); ``TrialContext`` is what its loop
sees; ``LocalContext`` runs a loop without Ray (tests, notebooks). ``PositiveInt``,
``Fraction``, ``Range`` ... declare a config field's bounds; ``parse_spec`` reads
``name/arg+name`` specs. ``UserError`` and its kinds (``ConfigError``, ``DataError``,
``MissingDataError``) end a command with one line and exit code 2; the data helpers
(``require_file``, ``open_npy``, ``storage``, ``check_writable``, ...) serve readers and
data commands. See docs/writing-a-study.md and docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raystudy._version import __version__
from raystudy.contract import *  # noqa: F403 -- the contract is the public surface
from raystudy.contract import __all__ as _contract_names

if TYPE_CHECKING:
    from raystudy import claims
    from raystudy.contract.context import LocalContext as LocalContext

__all__ = ["__version__", "claims", "LocalContext", *_contract_names]


def __getattr__(name: str) -> Any:
    if name == "LocalContext":  # imports torch: only when asked for
        from raystudy.contract.context import LocalContext

        return LocalContext
    if name == "claims":  # imports NumPy and SciPy: only when asked for
        import importlib

        return importlib.import_module("raystudy.claims")
    raise AttributeError(f"module 'raystudy' has no attribute {name!r}")
