r"""Muon: momentum orthogonalized by Newton–Schulz, a drop-in for ``torch.optim.Muon``.

Muon (Jordan et al. 2024, kellerjordan.github.io/posts/muon) is steepest descent
under the spectral norm with momentum (Crawshaw et al. 2025, arXiv 2510.09827,
Sec. 2). For each matrix parameter :math:`W` with gradient :math:`G`:

.. math::
    B_t &= \mu B_{t-1} + (1-\mu) G_t, \qquad
    \tilde B_t = \begin{cases} (1-\mu) G_t + \mu B_t & \text{nesterov} \\
                               B_t & \text{otherwise} \end{cases} \\
    W_t &= (1 - \gamma\lambda) W_{t-1} - \gamma\, s(m, n)\, \operatorname{NS}_k(\tilde B_t)

Symbols and defaults (identical to ``torch.optim.Muon``): :math:`\gamma` ``lr``
(1e-3); :math:`\lambda` ``weight_decay`` (0.1, decoupled); :math:`\mu`
``momentum`` (0.95); ``nesterov`` (True); :math:`\operatorname{NS}_k` ``ns_steps``
(5) Newton–Schulz steps with ``ns_coefficients`` :math:`(a,b,c)` (3.4445, -4.775,
2.0315) and Frobenius guard ``eps`` (1e-7), see :mod:`.polar`; :math:`s(m,n)` the
``adjust_lr_fn`` scale: ``None``/``"original"`` :math:`\sqrt{\max(1, m/n)}`,
``"match_rms_adamw"`` :math:`0.2\sqrt{\max(m,n)}`. :math:`B_0 = 0`.

Differences from ``torch.optim.Muon``:

* ``ns_dtype``: iteration precision; ``None`` = bf16 on CUDA and on CPUs where it
  is measured faster, else fp32 (``polar.default_polar_dtype``; torch always uses bf16,
  about 14x slower on CPUs without bf16 matmul). With
  ``ns_dtype=torch.bfloat16`` the result equals torch's.
* parameters with ``ndim > 2`` (conv kernels ``(out, in, kh, kw)``) are flattened
  to :math:`(m, n) = (\text{out}, -1)`, and :math:`s(m, n)` is read from that
  flattened shape, not from the first two kernel dimensions.
* ``p.grad`` and the momentum buffer are never modified by the orthogonalization
  (torch's in-place normalisation writes into the buffer when it is already bf16
  and ``nesterov=False``).

Speed: the momentum and weight-decay arithmetic are fused over all parameters of a
group (``torch._foreach_*``), and Newton–Schulz runs once per distinct (wide-oriented)
shape as one batched chain over all matrices of that shape (:func:`.polar_factors`; a
transformer has a handful of shapes), with the same operations as torch's per-matrix
chain; chains that share the short side iterate together. The Nesterov momentum, the
stacks, the iterates and the factors cast back to the parameter's dtype live in buffers
the optimizer keeps on the CPU (:class:`.PolarWorkspace`; allocated afresh each step they
cost page faults there; on CUDA the caching allocator reuses memory, and they are per
step), and the exact bf16 -> fp32 cast makes the update equal
torch's mixed-dtype add, so the parameters equal torch.optim.Muon's bit for bit on the
CPUs measured (AMD EPYC, bench model at width 128 and 256).

Like torch's, this class is meant for hidden-layer matrices only; use
:class:`.MuonAdam` or :class:`.MuonMax` for a whole model.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor
from torch.optim import Optimizer

from .checks import check_lr, check_nonnegative
from .polar import JORDAN_COEFFICIENTS, PolarWorkspace, keeps_buffers, polar_factors

ADJUST_LR_FNS = (None, "original", "match_rms_adamw")


def adjusted_lr(lr: float, adjust_lr_fn: str | None, m: int, n: int) -> float:
    """``lr * s(m, n)`` for the flattened shape ``(m, n)``."""
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1.0, m / n))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(m, n))
    raise ValueError(f"adjust_lr_fn must be one of {ADJUST_LR_FNS}, got {adjust_lr_fn!r}")


def as_matrix(t: Tensor) -> Tensor:
    """View of ``t`` as ``(t.shape[0], -1)``; conv kernels and any ``ndim > 2`` tensor."""
    return t if t.ndim == 2 else t.reshape(t.shape[0], -1)


class Muon(Optimizer):
    """Muon with ``torch.optim.Muon``'s signature and defaults, plus ``ns_dtype``.

    Args:
        params: parameters (ndim >= 2) or param groups.
        lr: learning rate :math:`\\gamma` (default 1e-3).
        weight_decay: decoupled weight decay :math:`\\lambda` (default 0.1).
        momentum: :math:`\\mu` (default 0.95).
        nesterov: Nesterov momentum (default True).
        ns_coefficients: quintic :math:`(a, b, c)` (default (3.4445, -4.775, 2.0315)).
        eps: lower bound of the normalising Frobenius norm (default 1e-7).
        ns_steps: Newton–Schulz steps (default 5).
        adjust_lr_fn: ``None``, ``"original"`` or ``"match_rms_adamw"`` (default None).
        ns_dtype: Newton–Schulz precision (default None: ``polar.default_polar_dtype``).
    """

    uses_loss = False

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = JORDAN_COEFFICIENTS,
        eps: float = 1e-7,
        ns_steps: int = 5,
        adjust_lr_fn: str | None = None,
        ns_dtype: torch.dtype | None = None,
    ) -> None:
        check_lr(lr)
        check_nonnegative(weight_decay, "weight_decay")
        check_nonnegative(momentum, "momentum")
        if adjust_lr_fn not in ADJUST_LR_FNS:
            raise ValueError(f"adjust_lr_fn must be one of {ADJUST_LR_FNS}, got {adjust_lr_fn!r}")
        if len(ns_coefficients) != 3:
            raise ValueError(f"ns_coefficients must be (a, b, c), got {ns_coefficients!r}")
        defaults = dict(
            lr=lr,
            weight_decay=weight_decay,
            momentum=momentum,
            nesterov=nesterov,
            ns_coefficients=tuple(ns_coefficients),
            eps=eps,
            ns_steps=ns_steps,
            adjust_lr_fn=adjust_lr_fn,
            ns_dtype=ns_dtype,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim < 2:
                    raise ValueError(
                        f"Muon needs parameters with ndim >= 2, got shape {tuple(p.shape)}; "
                        "use MuonAdam or MuonMax to train biases, gains and embeddings"
                    )
        self._polar_workspace = PolarWorkspace()

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._polar_workspace = PolarWorkspace()      # buffers, not state: never saved

    def _nesterov(self, grads: list[Tensor], bufs: list[Tensor], mu: float,
                  workspace: PolarWorkspace | None) -> list[Tensor]:
        """``(1 - mu) G + mu B_t`` per parameter, in workspace buffers on the CPU: fresh
        tensors of this size each step come back as page faults there (992 a step at width
        256, AMD EPYC)."""
        if workspace is None:
            return torch._foreach_lerp(grads, bufs, mu)
        return [torch.lerp(G, B, mu, out=workspace.buffer(
                    f"nesterov{i}", tuple(G.shape), G.dtype, G.device))
                for i, (G, B) in enumerate(zip(grads, bufs, strict=True))]

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        """One Muon step; ``closure`` (optional) re-evaluates and returns the loss."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, mu = group["lr"], group["momentum"]
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            for p in params:
                if "momentum_buffer" not in self.state[p]:
                    self.state[p]["momentum_buffer"] = torch.zeros_like(p.grad)
            bufs = [self.state[p]["momentum_buffer"] for p in params]
            torch._foreach_lerp_(bufs, grads, 1 - mu)                 # B_t = mu B + (1-mu) G
            workspace = self._polar_workspace if keeps_buffers(params) else None
            B_tilde = self._nesterov(grads, bufs, mu, workspace) if group["nesterov"] else bufs
            Os = polar_factors(                                       # NS_k, one chain per shape
                [as_matrix(B) for B in B_tilde],
                method="jordan",
                steps=group["ns_steps"],
                dtype=group["ns_dtype"],
                coefficients=group["ns_coefficients"],
                eps=group["eps"],
                workspace=workspace,              # in its buffers, in B's dtype: used here
            )
            if group["weight_decay"] != 0.0:
                torch._foreach_mul_(params, 1 - lr * group["weight_decay"])
            for p, O in zip(params, Os, strict=True):                 # W_t = (1-lr wd) W - lr s O
                p.add_(O.reshape(p.shape),
                       alpha=-adjusted_lr(lr, group["adjust_lr_fn"], *as_matrix(p).shape))
        return loss
