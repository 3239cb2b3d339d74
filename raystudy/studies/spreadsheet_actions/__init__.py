"""Next-action prediction in spreadsheets, scored online by the sheet state it produces
(NAPE, ICML 2026), on generated sheets and trajectories.

The study package: ``config.py`` (the frozen config, the predictors and in-trial
conditions), ``recipe.py`` (fit, online evaluation over the test sheets, ``STUDY``),
``analysis.py`` (claims N1-N5, tables, figures), ``data.py`` (generated sheets, trajectory
files, ``raystudy data make-spreadsheets``), ``profiles/`` and ``spaces/``. ``STUDY`` is
built on first access.
"""

from __future__ import annotations

from raystudy import lazy_study
from raystudy.studies.spreadsheet_actions.data import (
    DATA_COMMANDS,  # `raystudy data` reads them here
)

__all__ = ["DATA_COMMANDS", "STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
