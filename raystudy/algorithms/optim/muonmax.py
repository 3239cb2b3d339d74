r"""MuonMax and MuonMax-Momo (Crawshaw et al. 2025, arXiv 2510.09827).

MuonMax is regularized steepest descent under the *hybrid* product norm: the
max of the matrix layers' spectral norms (scaled by :math:`1/s`), combined in
:math:`\ell_2` with the Adam-weighted norm of the vector parameters. Its dual
norm of the momentum is

.. math::
    \|m\|_* = \sqrt{A^2 + B^2}, \quad A = s \sum_l \|M_l\|_*, \quad
    B^2 = \sum_i \|m_i / \sqrt{\epsilon + \sqrt{v_i}}\|_2^2 ,

and the step, with :math:`\rho = s^2` and :math:`A_0 = \sum_l \|M_l\|_*`,

.. math::
    W_l \leftarrow (1-\alpha\lambda) W_l - t\,\rho A_0\operatorname{polar}(M_l), \qquad
    w_i \leftarrow (1-\alpha\lambda) w_i - t\, m_i / (\epsilon + \sqrt{v_i}),

with :math:`t = \alpha` (MuonMax), or for MuonMax-Momo

.. math::
    t = \min\Big(\alpha,\ \frac{(\bar F_k - F^* + \langle x_k, m_k\rangle)_+}
                       {\rho A_0^2 + B^2}\Big).

Every matrix layer's step is scaled by the sum of all layers' nuclear norms,
which is what makes the method robust to the learning rate. ``stale_nuclear_norm``
(default True) reuses the previous step's :math:`\|M_l\|_*` in :math:`A_0`.
Symbols, defaults, moments and the :math:`(\cdot)_+` decision: :mod:`.hybrid`;
arguments as in :mod:`.muon_adam` (``rho`` :math:`= s^2`, default 10).
"""

from __future__ import annotations

from .hybrid import HybridSteepestDescent


class MuonMax(HybridSteepestDescent):
    """Hybrid-norm regularized steepest descent; ``t = lr``."""

    hybrid_norm = True
    uses_loss = False


class MuonMaxMomo(HybridSteepestDescent):
    """MuonMax with the Momo step size; needs the loss (``step(closure)`` or ``loss=``)."""

    hybrid_norm = True
    uses_loss = True
