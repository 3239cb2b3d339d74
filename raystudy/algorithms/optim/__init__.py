"""Optimizers of the MuonMax / Momo study: plain ``torch.optim.Optimizer`` subclasses.

Crawshaw, Modi, Liu, Gower 2025 (arXiv 2510.09827) and Schaipp et al. 2023
(arXiv 2305.07583). File map:

* ``polar.py``: ``polar_factor`` (Polar Express, Jordan quintic, SVD); ``polar_factors``
  for many matrices (same shapes batched) in a ``PolarWorkspace`` an optimizer keeps.
* ``muon.py``: ``Muon``, a drop-in for ``torch.optim.Muon`` (flattens conv kernels).
* ``split.py``: which parameters are "matrix" (spectral) and which "vector" (Adam).
* ``hybrid.py``: shared machinery of the split methods; ``muon_adam.py``:
  ``MuonAdam``, ``MuonAdamMomo``; ``muonmax.py``: ``MuonMax``, ``MuonMaxMomo``.
* ``momo.py``: ``Momo``, ``MomoAdam``; ``truncation.py``: the Momo step size.
* ``factory.py``: ``make_optimizer`` by name, ``optimizer_step``.
"""

from .factory import OPTIMIZER_NAMES, make_optimizer, optimizer_step
from .hybrid import HybridSteepestDescent
from .momo import Momo, MomoAdam
from .muon import Muon
from .muon_adam import MuonAdam, MuonAdamMomo
from .muonmax import MuonMax, MuonMaxMomo
from .polar import PolarWorkspace, polar_factor, polar_factors
from .split import default_is_matrix, matrix_param_groups, split_parameters

__all__ = [
    "OPTIMIZER_NAMES",
    "HybridSteepestDescent",
    "Momo",
    "MomoAdam",
    "Muon",
    "MuonAdam",
    "MuonAdamMomo",
    "MuonMax",
    "MuonMaxMomo",
    "PolarWorkspace",
    "default_is_matrix",
    "make_optimizer",
    "matrix_param_groups",
    "optimizer_step",
    "polar_factor",
    "polar_factors",
    "split_parameters",
]
