"""A studentized spherical-harmonic two-sample test for compositional and directional data.

Paper: "A Studentized Spherical Harmonics-Based Nonparametric Two-Sample Test for
Compositional and Directional Data" (ICML 2026 poster 64099; only the abstract is public,
so the test is raystudy's reconstruction: see ``harmonic_test.py`` and
``docs/compositional_two_sample.md``).

* ``two_sample_test(x, y, *, seed, degree, studentize, distance, alpha, data)``: the
  proposed test (``harmonic_test.py``), on the kernel of ``gegenbauer.py`` with the
  studentizations of ``studentize.py``;
* baselines with the same :class:`TwoSampleResult`: permutation energy and MMD tests and
  cross-MMD (``kernel_baselines.py``), Hotelling, James and Cao-Lin-Li on log-ratios
  (``logratio.py``), the Dirichlet likelihood-ratio test (``dirichlet.py``), a
  mean-direction test (``directional.py``);
* data: :class:`Scenario` and :func:`generate` (``generators.py``), :func:`read_table`
  (``tables.py``); one Monte Carlo batch: :func:`run_batch` (``batch.py``).
"""

from .batch import METHODS, BatchResult, default_methods, run_batch, run_method
from .directional import mean_direction_test
from .dirichlet import dirichlet_lrt_test, dirichlet_mle
from .gegenbauer import gegenbauer_coefficients, harmonic_kernel
from .generators import FAMILIES, SAME_MEAN, Scenario, generate
from .harmonic_test import two_sample_test
from .kernel_baselines import cross_mmd_test, energy_permutation_test, mmd_permutation_test
from .logratio import cao_lin_li_test, clr, hotelling_test, ilr, james_test
from .samples import TwoSampleResult
from .tables import CompositionTable, read_table

__all__ = [
    "FAMILIES",
    "METHODS",
    "SAME_MEAN",
    "BatchResult",
    "CompositionTable",
    "Scenario",
    "TwoSampleResult",
    "cao_lin_li_test",
    "clr",
    "cross_mmd_test",
    "default_methods",
    "dirichlet_lrt_test",
    "dirichlet_mle",
    "energy_permutation_test",
    "gegenbauer_coefficients",
    "generate",
    "harmonic_kernel",
    "hotelling_test",
    "ilr",
    "james_test",
    "mean_direction_test",
    "mmd_permutation_test",
    "read_table",
    "run_batch",
    "run_method",
    "two_sample_test",
]
