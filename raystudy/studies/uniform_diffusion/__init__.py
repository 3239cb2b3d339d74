"""Simple denoising loss vs the UDLM NELBO for uniform-state diffusion LMs (ICML 2026).

The study package: ``config.py`` (the frozen config and the losses' names), ``recipe.py``
(the loop, the losses, the evaluation, ``STUDY``), ``analysis.py`` (claims U1-U4, the
table and figures), ``data.py`` (the Markov stand-in, stdlib bytes and token folders),
``profiles/`` and ``spaces/``. ``STUDY`` is built on first access.
"""

from __future__ import annotations

from raystudy import lazy_study

__all__ = ["STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
