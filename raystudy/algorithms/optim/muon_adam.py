r"""MuonAdam and MuonAdam-Momo (Crawshaw et al. 2025, arXiv 2510.09827).

MuonAdam is steepest descent under the max-product norm with the linear
minimisation oracle per part: Muon on hidden matrices, Adam on the rest
(embeddings, output head, biases, gains). With learning rate :math:`\alpha` and
:math:`\rho` the Muon learning-rate multiple (``muon_lr_scale`` in the paper's
code):

.. math::
    W_l \leftarrow (1-\alpha\lambda) W_l - t\,\rho\,\operatorname{polar}(M_l), \qquad
    w_i \leftarrow (1-\alpha\lambda) w_i - t\, m_i / (\epsilon + \sqrt{v_i}),

with :math:`t = \alpha` (MuonAdam), or for MuonAdam-Momo

.. math::
    t = \min\Big(\alpha,\ \frac{(\bar F_k - F^* + \langle x_k, m_k\rangle)_+}
                       {\rho \sum_l \|M_l\|_* + \sum_i \|m_i/\sqrt{\epsilon+\sqrt{v_i}}\|^2}\Big).

Adam part as in the paper's code: :math:`\beta_1=\beta_2=0.95`,
:math:`\epsilon=10^{-8}`, no bias correction (moments start at :math:`g, g^2`).
Symbols, the stale nuclear norm and the :math:`(\cdot)_+` decision: :mod:`.hybrid`.

Args (all classes): ``params`` (param groups with ``"matrix": bool``, e.g. from
:func:`.matrix_param_groups`; plain tensors are split by ``ndim >= 2``),
``lr`` :math:`\alpha` (1e-3), ``weight_decay`` :math:`\lambda` (0.1), ``rho``
:math:`\rho` (10), ``momentum`` :math:`\mu` (0.95), ``betas`` (0.95, 0.95),
``eps`` (1e-8), ``polar_method`` ("polar_express"), ``ns_steps`` (5),
``ns_dtype`` (None: ``polar.default_polar_dtype``), ``stale_nuclear_norm`` (True);
Momo only: ``f_star`` :math:`F^*` (0), ``positive_part`` (True).
"""

from __future__ import annotations

from .hybrid import HybridSteepestDescent


class MuonAdam(HybridSteepestDescent):
    """Muon on matrix parameters, Adam (no bias correction) on the rest; ``t = lr``."""

    hybrid_norm = False
    uses_loss = False


class MuonAdamMomo(HybridSteepestDescent):
    """MuonAdam with the Momo step size; needs the loss (``step(closure)`` or ``loss=``)."""

    hybrid_norm = False
    uses_loss = True
