"""Block sampling vs random vs streaming for a cell-line classifier (scDataset, ICML 2026).

The study package: ``config.py`` (the config dataclasses and the ``sampling.loader``
parser), ``recipe.py`` (the collection, the model, the training loop, ``STUDY``),
``analysis.py`` (the loaders table, the figure, the throughput claims), ``data.py``
(``raystudy data make-anndata``), ``blocks.py`` (the block-sampled Ray Data source), and
``profiles/`` and ``spaces/``. ``STUDY`` is built on first access, so ``raystudy list``
reads this docstring without importing the recipe.
"""

from __future__ import annotations

from raystudy import lazy_study
from raystudy.studies.cell_classifier.data import (
    DATA_COMMANDS,  # `raystudy data` reads them here
)

__all__ = ["DATA_COMMANDS", "STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
