"""Simple denoising loss vs the UDLM NELBO for uniform-state diffusion LMs (ICML 2026).

The study package: ``config.py`` (the frozen config and the losses' names), ``recipe.py``
(the loop, the losses, the evaluation, ``STUDY``), ``analysis.py`` (claims U1-U4, the
table and figures), ``data.py`` (the Markov stand-in, stdlib bytes and token folders),
``evaluator.py`` (the AR evaluator of Gen PPL on text; ``data.py``'s ``raystudy data
train-ar-evaluator`` trains it), ``profiles/`` and ``spaces/``. ``STUDY`` is built on first access.
"""

from __future__ import annotations

from raystudy import lazy_study
from raystudy.studies.uniform_diffusion.data import (
    DATA_COMMANDS,  # `raystudy data` reads them here
)

__all__ = ["DATA_COMMANDS", "STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
