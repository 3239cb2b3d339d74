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

from .gegenbauer import gegenbauer_coefficients, harmonic_kernel
from .harmonic_test import two_sample_test
from .samples import TwoSampleResult

__all__ = [
    "TwoSampleResult",
    "gegenbauer_coefficients",
    "harmonic_kernel",
    "two_sample_test",
]
