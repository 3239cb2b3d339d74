"""Empirical Gaussian processes: GP priors learned by EM from a corpus of datasets.

Lin, Ament, Tiao, Eriksson, Balandat, Bakshy, "Empirical Gaussian Processes"
(arXiv 2602.12082, ICML 2026). See ``docs/empirical_gp.md``.

* ``em_fit(datasets, reference_points, base_kernel, ...) -> EmpiricalPrior`` (``em.py``);
  batched E-step and shard statistics in ``estep.py``; shift interpolation and the
  shared-grid estimator in ``prior.py``;
* ``EmpiricalMean``, ``EmpiricalKernel``, ``fit_predict`` (``modules.py``): the prior
  as GPyTorch modules;
* corpora (``corpora.py``), local-file loaders and held-out splits (``loaders.py``), and
  the study's baselines: per-task type-II ML kernels (``baselines.py``), one GP fitted on
  the whole corpus by its summed marginal likelihood (``corpus_gp.py``), per-task
  parametric learning curves (``curve_models.py``).
"""

from .em import em_fit, m_step
from .estep import Corpus, SufficientStats, check_datasets, loop_statistics, shard_statistics
from .prior import EmpiricalPrior, base_prior, project_psd, safe_cholesky, shared_grid_prior

__all__ = [
    "Corpus",
    "EmpiricalPrior",
    "SufficientStats",
    "base_prior",
    "check_datasets",
    "em_fit",
    "loop_statistics",
    "m_step",
    "project_psd",
    "safe_cholesky",
    "shard_statistics",
    "shared_grid_prior",
]
