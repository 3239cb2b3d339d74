"""UltraLIF (ultradiscretized spiking neurons) against surrogate-gradient LIF (ICML 2026).

The study package: ``config.py`` (the config dataclasses, the neuron and data-set name
lists, the checks ``validate`` runs), ``recipe.py`` (data loading, the networks, the
training loop, ``STUDY``), ``analysis.py`` (tables, figures, claims), ``data.py``
(``raystudy data make-events`` and ``make-nmnist``, the cached N-MNIST-format digits), and
``profiles/`` and ``spaces/``. ``STUDY`` is built on first access.
"""

from __future__ import annotations

from raystudy import lazy_study
from raystudy.studies.spiking_nets.data import DATA_COMMANDS

__all__ = ["DATA_COMMANDS", "STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
