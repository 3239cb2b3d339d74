r"""The training loss's Hessian: top eigenvalues, spectral density and epsilon-rank.

:math:`H = \nabla^2_\theta L(\theta)` for all parameters :math:`\theta \in \mathbb{R}^p` of
``model``, with :math:`L = ` ``loss_fn(model(inputs), targets)`` (PyHessian's calling
convention; ``targets`` may be any pytree the loss understands, e.g. PPO's rollout).
:math:`H` is never formed except by ``method="dense"``: Hessian-vector products
:math:`v \mapsto Hv` come from ``torch.func`` (reverse-over-reverse, the gradient
linearised once per call site), summed over sample chunks weighted by chunk size
(exact for a mean loss).

**Lanczos** (Lanczos 1950; Golub & Van Loan, Alg. 10.1.1) builds an orthonormal basis
:math:`V_m = [v_1 \dots v_m]` of the Krylov space of :math:`H` from a random unit
:math:`v_1`, with :math:`H V_m = V_m T_m + \beta_m v_{m+1} e_m^\top` and :math:`T_m`
tridiagonal (:math:`\alpha_j` on the diagonal, :math:`\beta_j` off it):

.. math::
    w = H v_j - \beta_{j-1} v_{j-1}, \quad \alpha_j = w^\top v_j, \quad
    w \leftarrow w - \alpha_j v_j, \quad \beta_j = \|w\|, \quad v_{j+1} = w / \beta_j .

Every :math:`w` is re-orthogonalised against all earlier :math:`v_i` (classical
Gram-Schmidt, repeated when the first pass cancels more than a factor :math:`\sqrt 2` of
its norm: the DGKS criterion), so :math:`V_m` stays orthonormal in floating point and no
ghost eigenvalues appear. On breakdown (:math:`\beta_j \approx 0`: an invariant subspace) the
run restarts from a random vector orthogonal to :math:`V_j` with :math:`\beta_j = 0`, so
:math:`m = p` iterations give exactly the eigenvalues of :math:`H`, multiplicities
included. The eigenvalues :math:`\theta_k` of :math:`T_m` (Ritz values) approximate the
extreme eigenvalues of :math:`H` first; ``hessian_eigenvalues`` returns the top ``k``.

**Stochastic Lanczos quadrature** (Golub & Meurant 1994; Ghorbani, Krishnan & Xiao 2019,
whose code the authors use): with :math:`T_m = Y \operatorname{diag}(\theta) Y^\top`,
nodes :math:`\theta_k` and weights :math:`\tau_k = Y_{1k}^2` form a Gauss quadrature of
the spectral measure seen from :math:`v_1`: :math:`\sum_k \tau_k \theta_k^i =
v_1^\top H^i v_1` for :math:`i \le 2m-1`, and :math:`\mathbb{E}_{v_1}[v_1^\top H^i v_1] =
\operatorname{tr}(H^i)/p`. The density, as the authors compute it (lop-jax
``utils/density.py``), averages over ``probes`` runs

.. math::
    \phi(t) = \frac{1}{n_v}\sum_{l=1}^{n_v}\sum_{k=1}^{m} \tau_k^{(l)}
    \mathcal{N}\big(t;\ \theta_k^{(l)},\ \sigma^2 \max(1, \lambda_{\max}-\lambda_{\min})\big)

on ``grid_len`` points spanning :math:`[\lambda_{\min} - 0.01, \lambda_{\max} + 0.01]`
(:math:`\lambda_{\max/\min}`: probe-mean of the extreme Ritz values), normalised to
integrate to one. Defaults: ``iterations=100``, ``probes=1``, ``sigma2=1e-5``,
``grid_len=10000`` (the authors' values).

**Epsilon-rank** (the paper's measure): the percentage of spectral mass with
:math:`|\lambda| > \epsilon`, three ways (``method``):

* ``"trapezoid"`` (the default; the authors' ``np.trapz(density[mask], grids[mask])`` over
  ``np.trapz(density, grids)``, lop-jax ``analysis/plot_epsilon_rank.py``): the trapezoid
  rule over the grid points with :math:`|t| > \epsilon`. The kept points are not
  contiguous, so the rule also adds one trapezoid spanning :math:`[-\epsilon, \epsilon]`
  between the two nearest kept points, :math:`(t_r - t_l)(\phi(t_l) + \phi(t_r))/2`: mass
  inside the band counts where the density is high at :math:`\pm\epsilon`.
* ``"riemann"`` (raystudy's earlier measure): :math:`100 \sum_{|t_i|>\epsilon} \phi(t_i) /
  \sum_i \phi(t_i)`, the grid points outside the band only.
* ``"quadrature"`` (no kernel): the probe mean of :math:`100 \sum_k \tau_k
  [|\theta_k| > \epsilon]`, the Lanczos weights of the nodes outside the band. The
  density's kernel variance :math:`\sigma^2 \max(1, \lambda_{\max} - \lambda_{\min})` grows
  with the spectrum's range, so one large eigenvalue smears the bulk near 0 across
  :math:`\pm\epsilon`; the quadrature has no smoothing to grow. With ``relative=True`` it is
  also invariant to :math:`H \to cH` (scale-invariant).

For an eigenvalue list: the percentage of eigenvalues with :math:`|\lambda| > \epsilon`.
``relative=True`` uses :math:`\epsilon |\lambda|_{\max}` instead of the authors' absolute
:math:`\epsilon`.

Note: one Lanczos run sees each distinct eigenvalue once until the basis is exhausted,
so near-degenerate top eigenvalues need more iterations than distinct ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor
from torch.func import functional_call, grad, jvp, vjp, vmap

LossFn = Callable[[Any, Any], Tensor]
Matvec = Callable[[Tensor], Tensor]


# ----------------------------------------------------------------------------- HVPs
def _parameters(model: torch.nn.Module) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    return params, buffers


def _flatten(tree: dict[str, Tensor]) -> Tensor:
    return torch.cat([t.reshape(-1) for t in tree.values()])


def _unflatten(flat: Tensor, like: dict[str, Tensor]) -> dict[str, Tensor]:
    out, start = {}, 0
    for name, t in like.items():
        out[name] = flat[start:start + t.numel()].view_as(t)
        start += t.numel()
    return out


def _slice(tree: Any, start: int, stop: int) -> Any:
    """Rows ``start:stop`` of every tensor in a (nested tuple/list/dict) pytree."""
    if isinstance(tree, Tensor):
        return tree[start:stop]
    if isinstance(tree, dict):
        return {k: _slice(v, start, stop) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_slice(v, start, stop) for v in tree)
    return tree


def _chunks(inputs: Any, targets: Any, batch_size: int | None) -> list[tuple[Any, Any, float]]:
    """``[(inputs_c, targets_c, n_c / n)]``; one chunk for non-tensor inputs or no batch_size."""
    if batch_size is None or not isinstance(inputs, Tensor) or len(inputs) <= batch_size:
        return [(inputs, targets, 1.0)]
    n = len(inputs)
    out = []
    for start in range(0, n, batch_size):
        stop = min(n, start + batch_size)
        out.append((inputs[start:stop], _slice(targets, start, stop), (stop - start) / n))
    return out


def make_hvp(model: torch.nn.Module, loss_fn: LossFn, inputs: Any, targets: Any,
             batch_size: int | None = None) -> tuple[Matvec, int]:
    """``(v -> Hv, p)`` on flat vectors of length ``p`` (the number of parameters).

    Without ``batch_size`` the gradient is linearised once (memory: one double-backward
    graph) and every product reuses it; with it, each product walks the chunks of
    ``batch_size`` samples (bounded memory), weighting each chunk's Hessian by its size.
    """
    params, buffers = _parameters(model)

    def loss_of(p: dict[str, Tensor], x: Any, y: Any) -> Tensor:
        return loss_fn(functional_call(model, (p, buffers), (x,)), y)

    chunks = _chunks(inputs, targets, batch_size)
    if len(chunks) == 1:
        _, linear = vjp(grad(lambda p: loss_of(p, inputs, targets)), params)

        def matvec(v: Tensor) -> Tensor:
            return _flatten(linear(_unflatten(v, params))[0])
    else:
        def matvec(v: Tensor) -> Tensor:
            tangent = _unflatten(v, params)
            total = torch.zeros_like(v)
            for x, y, weight in chunks:
                g = grad(lambda p, x=x, y=y: loss_of(p, x, y))
                total += weight * _flatten(jvp(g, (params,), (tangent,))[1])
            return total

    return matvec, sum(t.numel() for t in params.values())


def full_hessian(model: torch.nn.Module, loss_fn: LossFn, inputs: Any, targets: Any,
                 columns: int = 256) -> Tensor:
    """The dense ``p x p`` Hessian (symmetrised), ``columns`` HVPs at a time; small nets only."""
    matvec, p = make_hvp(model, loss_fn, inputs, targets)
    dtype, device = next(model.parameters()).dtype, next(model.parameters()).device
    eye = torch.eye(p, dtype=dtype, device=device)
    h = torch.cat([vmap(matvec)(eye[i:i + columns]) for i in range(0, p, columns)])
    return (h + h.T) / 2


# ----------------------------------------------------------------------------- Lanczos
@dataclass
class Tridiagonal:
    """Lanczos output: :math:`\\alpha` (length m) and :math:`\\beta` (length m-1)."""

    alpha: Tensor
    beta: Tensor

    def matrix(self) -> Tensor:
        t = torch.diag(self.alpha)
        if len(self.beta):
            t = t + torch.diag(self.beta, 1) + torch.diag(self.beta, -1)
        return t

    def nodes_weights(self) -> tuple[Tensor, Tensor]:
        """Ritz values :math:`\\theta` (ascending) and quadrature weights :math:`\\tau`."""
        theta, y = torch.linalg.eigh(self.matrix())
        return theta, y[0] ** 2


def _unit_random(dim: int, generator: torch.Generator | None, dtype, device) -> Tensor:
    v = torch.randn(dim, generator=generator, dtype=dtype, device="cpu").to(device)
    return v / torch.linalg.vector_norm(v)


def lanczos(matvec: Matvec, dim: int, iterations: int, v0: Tensor | None = None,
            generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32,
            device: torch.device | str = "cpu") -> Tridiagonal:
    """``min(iterations, dim)`` Lanczos steps from ``v0`` (default: random unit vector).

    Full re-orthogonalisation (Gram-Schmidt against every earlier vector, repeated when it
    cancels: DGKS); a breakdown restarts from a random orthogonal vector with :math:`\\beta = 0`.
    """
    m = min(int(iterations), dim)
    if m < 1:
        raise ValueError(f"iterations={iterations} must be >= 1")
    basis = torch.zeros(m, dim, dtype=dtype, device=device)
    v = (v0.to(dtype=dtype, device=device) / torch.linalg.vector_norm(v0) if v0 is not None
         else _unit_random(dim, generator, dtype, device))
    alpha = torch.zeros(m, dtype=dtype, device=device)
    beta = torch.zeros(max(m - 1, 0), dtype=dtype, device=device)
    tol, scale = 100 * torch.finfo(dtype).eps, 0.0
    for j in range(m):
        basis[j] = v
        w = matvec(v).to(dtype)
        alpha[j] = torch.dot(w, v)
        w = w - alpha[j] * v - (beta[j - 1] * basis[j - 1] if j else 0.0)
        done = basis[: j + 1]
        before = torch.linalg.vector_norm(w)
        w = w - done.T @ (done @ w)
        b = torch.linalg.vector_norm(w)
        if b < 0.7071 * before:  # cancellation: a second pass (Daniel et al. 1976, "DGKS")
            w = w - done.T @ (done @ w)
            b = torch.linalg.vector_norm(w)
        if j == m - 1:
            break
        scale = max(scale, abs(float(alpha[j])), float(b))
        if float(b) > tol * max(scale, 1e-30):
            beta[j], v = b, w / b
            continue
        v = _unit_random(dim, generator, dtype, device)  # invariant subspace: restart
        for _ in range(2):
            v = v - done.T @ (done @ v)
        v = v / torch.linalg.vector_norm(v)
    return Tridiagonal(alpha, beta)


# ----------------------------------------------------------------------------- top-k
def hessian_eigenvalues(model: torch.nn.Module, loss_fn: LossFn, inputs: Any, targets: Any,
                        k: int = 20, method: Literal["lanczos", "dense"] = "lanczos",
                        iterations: int | None = None, generator: torch.Generator | None = None,
                        batch_size: int | None = None) -> Tensor:
    """The top-``k`` eigenvalues of the loss Hessian, descending.

    ``lanczos``: ``iterations`` steps (default ``max(100, 3k)``, at most p) from one random
    start; ``dense``: ``eigvalsh`` of the full Hessian (p x p in memory: small nets).
    """
    if k < 1:
        raise ValueError(f"k={k} must be >= 1")
    if method == "dense":
        values = torch.linalg.eigvalsh(full_hessian(model, loss_fn, inputs, targets))
        return values.flip(0)[:k]
    if method != "lanczos":
        raise ValueError(f"method={method!r} must be 'lanczos' or 'dense'")
    matvec, p = make_hvp(model, loss_fn, inputs, targets, batch_size)
    first = next(model.parameters())
    steps = iterations if iterations is not None else max(100, 3 * k)
    tri = lanczos(matvec, p, steps, generator=generator, dtype=first.dtype, device=first.device)
    theta, _ = tri.nodes_weights()
    return theta.flip(0)[:k]


# ----------------------------------------------------------------------------- density
@dataclass
class SpectralDensity:
    """A smoothed spectral density on a grid, with the quadrature it came from.

    ``grid``, ``density``: length ``grid_len``; ``nodes``, ``weights``: ``probes x m``.
    """

    grid: Tensor
    density: Tensor
    nodes: Tensor
    weights: Tensor

    @property
    def abs_max(self) -> float:
        """Largest Ritz value in magnitude (the estimate of :math:`|\\lambda|_{\\max}`)."""
        return float(self.nodes.abs().max())

    def top(self, k: int) -> Tensor:
        """Top-``k`` Ritz values of the first probe, descending."""
        return self.nodes[0].sort(descending=True).values[:k]

    def moment(self, order: int) -> float:
        """:math:`\\int t^i \\phi(t) dt` on the grid."""
        dx = float(self.grid[1] - self.grid[0])
        return float((self.grid ** order * self.density).sum() * dx)

    def quadrature_moment(self, order: int) -> float:
        """Probe mean of :math:`\\sum_k \\tau_k \\theta_k^i` (estimates :math:`tr(H^i)/p`)."""
        return float((self.weights * self.nodes ** order).sum(1).mean())


def density_from_quadrature(nodes: Tensor, weights: Tensor, sigma2: float = 1e-5,
                            grid_len: int = 10000, grid_expand: float = 1e-2) -> SpectralDensity:
    """Gaussian-smoothed density of ``probes x m`` nodes and weights (the authors' recipe)."""
    nodes, weights = nodes.double().cpu(), weights.double().cpu()
    lam_max = float(nodes.max(1).values.mean()) + grid_expand
    lam_min = float(nodes.min(1).values.mean()) - grid_expand
    grid = torch.linspace(lam_min, lam_max, grid_len, dtype=torch.float64)
    variance = sigma2 * max(1.0, lam_max - lam_min)
    density = torch.zeros_like(grid)
    for theta, tau in zip(nodes, weights, strict=True):
        kernel = torch.exp(-(grid[:, None] - theta[None, :]) ** 2 / (2 * variance))
        density += (kernel / math.sqrt(2 * math.pi * variance)) @ tau
    density /= len(nodes)
    density /= density.sum() * (grid[1] - grid[0])
    return SpectralDensity(grid, density, nodes, weights)


def hessian_spectral_density(model: torch.nn.Module, loss_fn: LossFn, inputs: Any,
                             targets: Any, iterations: int = 100, probes: int = 1,
                             sigma2: float = 1e-5, grid_len: int = 10000,
                             generator: torch.Generator | None = None,
                             batch_size: int | None = None) -> SpectralDensity:
    """Stochastic Lanczos quadrature of the loss Hessian: ``probes`` runs of ``iterations``."""
    if probes < 1:
        raise ValueError(f"probes={probes} must be >= 1")
    matvec, p = make_hvp(model, loss_fn, inputs, targets, batch_size)
    first = next(model.parameters())
    runs = [lanczos(matvec, p, iterations, generator=generator, dtype=first.dtype,
                    device=first.device).nodes_weights() for _ in range(probes)]
    nodes = torch.stack([theta for theta, _ in runs])
    weights = torch.stack([tau for _, tau in runs])
    return density_from_quadrature(nodes, weights, sigma2, grid_len)


EpsilonRank = Literal["trapezoid", "riemann", "quadrature"]
EPSILON_RANKS: tuple[str, ...] = ("trapezoid", "riemann", "quadrature")
"""The epsilon-rank's integration rules: the authors' (default), raystudy's earlier one, and
the kernel-free one from the quadrature weights."""


def epsilon_rank(spectrum: SpectralDensity | Tensor | Any, eps: float,
                 relative: bool = False, method: EpsilonRank = "trapezoid") -> float:
    """Percentage of spectral mass (density) or of eigenvalues (a list) with |lambda| > eps.

    ``method`` (densities only): ``trapezoid`` (the authors'), ``riemann`` or
    ``quadrature`` (see the module docstring). ``relative=True``: the threshold is
    ``eps * |lambda|_max`` instead of ``eps``.
    """
    if eps < 0:
        raise ValueError(f"eps={eps} must be >= 0")
    if method not in EPSILON_RANKS:
        raise ValueError(f"method={method!r} must be one of {', '.join(EPSILON_RANKS)}")
    if isinstance(spectrum, SpectralDensity):
        threshold = eps * spectrum.abs_max if relative else eps
        if method == "quadrature":
            outside = (spectrum.weights * (spectrum.nodes.abs() > threshold)).sum(1)
            return float(100 * (outside / spectrum.weights.sum(1)).mean())
        grid, density = spectrum.grid, spectrum.density
        mask = grid.abs() > threshold
        if method == "riemann":
            return float(100 * density[mask].sum() / density.sum())
        # np.trapz(density[mask], grid[mask]): the gap across [-eps, eps] is one trapezoid
        kept = torch.trapezoid(density[mask], grid[mask]) if int(mask.sum()) > 1 else 0.0
        return float(100 * kept / torch.trapezoid(density, grid))
    values = torch.as_tensor(spectrum, dtype=torch.float64).reshape(-1)
    if values.numel() == 0:
        raise ValueError("epsilon_rank needs at least one eigenvalue")
    threshold = eps * float(values.abs().max()) if relative else eps
    return float(100 * (values.abs() > threshold).double().mean())
