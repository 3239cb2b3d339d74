"""Fully dynamic k-center with outliers: layered sampling (raystudy's reconstruction) and baselines.

Paper: Huang, Li, Zhang, Li, Wang, Feng, "New Algorithms for Fully-Dynamic k-center with
Outliers" (ICML 2026 poster 64005; only the abstract is public, so :class:`LayeredSampling`
is **raystudy's reconstruction**, ``algorithm = "layered_reconstructed"``, not the authors'
algorithm: see ``layered.py`` and ``docs/dynamic_kcenter.md``). NumPy/SciPy only.

* :class:`KCenterSolution` (``core.py``): centers, covering radius after discarding the
  budget, outlier ids;
* :func:`offline_greedy` (``greedy.py``): Charikar et al.'s 3-approximation with exactly z
  outliers;
* dynamic structures with ``insert(point) -> id``, ``delete(id)``, ``query()``, ``len()``
  and ``ops`` (distance evaluations since creation, queries included):
  :class:`LayeredSampling` (``layered.py``), :class:`RadiusGuessing` (``radius_guessing.py``,
  CLSW-style levels), :class:`OfflineRecompute` (``greedy.py``, the greedy at every query);
* :func:`exact_kcenter` (``exact.py``): brute force for n <= 14, ``scipy.optimize.milp``
  above;
* :func:`generate` and :func:`stream` (``data.py``): blobs, twins (Delta = 10^a with OPT
  fixed), far_outliers, a local CSV; sliding-window, random and center-deleting streams.
"""

from .core import KCenterSolution
from .data import generate, stream
from .exact import exact_kcenter
from .greedy import OfflineRecompute, offline_greedy
from .layered import LayeredSampling
from .radius_guessing import RadiusGuessing

__all__ = [
    "KCenterSolution",
    "LayeredSampling",
    "OfflineRecompute",
    "RadiusGuessing",
    "exact_kcenter",
    "generate",
    "offline_greedy",
    "stream",
]
