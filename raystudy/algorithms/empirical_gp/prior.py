r"""The learned prior and how it reaches locations off the reference points.

Lin, Ament, Tiao, Eriksson, Balandat, Bakshy, "Empirical Gaussian Processes"
(arXiv 2602.12082, ICML 2026). EM learns the prior mean :math:`\mu_Z` (M,) and
covariance :math:`\Sigma_Z` (M, M) of :math:`f(Z)` on M reference points Z (M, d).
**Shift interpolation** carries them to any X (n, d) through a base GP with mean m
and kernel k:

.. math::
    W &= K(X, Z) K(Z, Z)^{-1}, \qquad
    \mu(X) = m(X) + W (\mu_Z - m(Z)), \\
    \Sigma(X, X') &= \underbrace{K(X, X') - W K(Z, X')}_{\Lambda(X, X')\ \text{(Nystrom residual)}}
    + W \Sigma_Z W'^\top .

It is the generative model :math:`f(Z) \sim N(\mu_Z, \Sigma_Z)`,
:math:`f(X) \mid f(Z) \sim N(m(X) + W(f(Z) - m(Z)), \Lambda)`: at X = Z it returns
:math:`(\mu_Z, \Sigma_Z)` exactly (W = I, Lambda = 0); far from Z it falls back to
the base GP. With :math:`\Sigma_Z = K(Z, Z)` and :math:`\mu_Z = m(Z)` it *is* the base GP.
``Lambda`` is written as :math:`K(X,X') - V^\top V'` with :math:`V = L^{-1} K(Z, X)`,
:math:`L L^\top = K(Z, Z)`, which stays PSD where :math:`K + W (\Sigma_Z - K_{ZZ}) W^\top`
would cancel catastrophically.

The shared-grid estimator (every dataset observed on one grid) has no base kernel:
its prior is carried between grid points by **linear interpolation**, W holding the
two hat-function weights of each x (1-D grids) and Lambda = 0.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import torch
from gpytorch.kernels import Kernel, MaternKernel, RBFKernel, ScaleKernel
from gpytorch.means import Mean, ZeroMean
from torch import Tensor

from .products import times_triangular

MIN_EIGENVALUE = 1e-10
"""PSD floor for learned covariances (BoTorch's ``project_psd`` uses the same)."""


def safe_cholesky(A: Tensor, max_tries: int = 6) -> Tensor:
    """Cholesky of a (batch of) symmetric PSD matrices, adding jitter only where it fails.

    Jitter starts at 1e-10 x the mean diagonal and grows 10x per try (as
    ``linear_operator``'s ``psd_safe_cholesky``), per batch member.
    """
    L, info = torch.linalg.cholesky_ex(A)
    if not bool((info > 0).any()):
        return L
    scale = A.diagonal(dim1=-2, dim2=-1).mean(-1, keepdim=True).abs().clamp_min(1e-300)
    eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    for attempt in range(max_tries):
        failed = info > 0
        jitter = (scale * 10.0 ** (attempt - 10)).unsqueeze(-1) * failed[..., None, None]
        L_try, info = torch.linalg.cholesky_ex(A + jitter * eye)
        L = torch.where(failed[..., None, None], L_try, L)
        if not bool((info > 0).any()):
            return L
    raise ValueError(f"matrix not positive definite even with jitter 1e{max_tries - 11} x "
                     "its mean diagonal (is the noise variance 0 and the kernel singular?)")


def project_psd(Sigma: Tensor, min_eigenvalue: float = MIN_EIGENVALUE) -> Tensor:
    """Symmetrise and clip eigenvalues to ``>= min_eigenvalue`` (PSD safeguard)."""
    Sigma = 0.5 * (Sigma + Sigma.mT)
    shifted = Sigma - min_eigenvalue * torch.eye(Sigma.shape[-1], dtype=Sigma.dtype,
                                                 device=Sigma.device)
    if not bool((torch.linalg.cholesky_ex(shifted).info > 0).any()):
        return Sigma        # the usual case: Sigma - floor I is PD, a Cholesky (1/8 of eigvalsh)
    evals, evecs = torch.linalg.eigh(Sigma)
    return (evecs * evals.clamp_min(min_eigenvalue)) @ evecs.mT


def as_inputs(x: Tensor, d: int) -> Tensor:
    """(n,) -> (n, 1); (..., n, d) unchanged."""
    return x.unsqueeze(-1) if x.dim() == 1 and d == 1 else x


def dense(k) -> Tensor:
    return k.to_dense() if hasattr(k, "to_dense") else k


def frozen_copy(module: torch.nn.Module, like: Tensor) -> torch.nn.Module:
    """A deep copy of a GPyTorch module in ``like``'s dtype/device, without gradients."""
    out = copy.deepcopy(module).to(dtype=like.dtype, device=like.device)
    for p in out.parameters():
        p.requires_grad_(False)
    return out


def stationary_form(kernel: Kernel) -> tuple[float, Tensor, Tensor | None] | None:
    """(nu, lengthscale (1, d), outputscale or None) of a plain Matern or RBF kernel
    (nu = inf), optionally in a ScaleKernel; None for any other kernel, or one with
    active dimensions or a batch shape (those go through GPyTorch)."""
    scale = None
    if type(kernel) is ScaleKernel:
        if kernel.batch_shape or kernel.active_dims is not None:
            return None
        scale, kernel = kernel.outputscale, kernel.base_kernel
    if type(kernel) not in (MaternKernel, RBFKernel) or kernel.batch_shape or \
            kernel.active_dims is not None:
        return None
    return getattr(kernel, "nu", math.inf), kernel.lengthscale, scale


def stationary_kernel(form: tuple[float, Tensor, Tensor | None], x1: Tensor, x2: Tensor,
                      out: Tensor | None = None) -> Tensor:
    r"""K(x1, x2) of a Matern-nu / RBF kernel from exact distances, in place where it can.

    :math:`s = \sqrt{2\nu}\, \|x - x'\|/\ell`; Matern-5/2 :math:`(1 + s + s^2/3) e^{-s}`,
    Matern-3/2 :math:`(1 + s) e^{-s}`, Matern-1/2 :math:`e^{-s}`, RBF
    :math:`e^{-\|x - x'\|^2 / 2\ell^2}`; ``out`` receives the result if given. GPyTorch's
    kernels compute the same from :math:`\|x\|^2 + \|x'\|^2 - 2 x^\top x'` (an error of
    ~1e-8 near the diagonal after the square root) with more temporaries: about 4x slower
    on (40,000, 100) blocks.
    """
    nu, lengthscale, scale = form
    c = 1.0 if nu == math.inf else math.sqrt(2 * nu)
    x1, x2 = x1 * (c / lengthscale), x2 * (c / lengthscale)
    if x1.shape[-1] == 1:                                  # 1-D: |x - x'| without a sqrt
        s = torch.sub(x1, x2.mT, out=out).abs_()
    else:
        s = torch.cdist(x1, x2, compute_mode="donot_use_mm_for_euclid_dist")
        s = s if out is None else out.copy_(s)
    if nu == math.inf:
        K = s.square_().mul_(-0.5).exp_()
    elif nu == 0.5:
        K = s.neg_().exp_()
    else:
        poly = torch.addcmul(s, s, s, value=1 / 3) if nu == 2.5 else s.clone()  # s + s^2/3
        K = s.neg_().exp_().mul_(poly.add_(1))                               # (1 + ...) e^-s
    return K if scale is None else K.mul_(scale.unsqueeze(-1).unsqueeze(-1))


class ShiftBasis(torch.nn.Module):
    """Base-GP quantities at Z for shift interpolation: ``L`` (chol K(Z,Z)), ``m(Z)``.

    ``weights(x)`` returns ``(W, V)``: W (..., n, M) and V = L^{-1} K(Z, x) (..., M, n).
    """

    def __init__(self, Z: Tensor, base_kernel: Kernel, base_mean: Mean | None = None) -> None:
        super().__init__()
        self.base_kernel = frozen_copy(base_kernel, Z)
        self.base_mean = frozen_copy(base_mean if base_mean is not None else ZeroMean(), Z)
        with torch.no_grad():
            self.register_buffer("Z", Z.clone())
            self.register_buffer("L", safe_cholesky(dense(self.base_kernel(Z, Z))))
            self.register_buffer("m_Z", self.base_mean(Z).reshape(-1).clone())
        self.L_inv: Tensor | None = None

    def k(self, x1: Tensor, x2: Tensor, out: Tensor | None = None) -> Tensor:
        """K(x1, x2) dense (into ``out`` if given): Matern/RBF kernels by
        ``stationary_kernel``, others by GPyTorch."""
        form = stationary_form(self.base_kernel)
        if form is None or form[1].dtype != x1.dtype:
            K = dense(self.base_kernel(x1, x2))
            return K if out is None else out.copy_(K)
        return stationary_kernel(form, x1, x2, out=out)

    def m(self, x: Tensor) -> Tensor:
        return self.base_mean(x)

    def weights(self, x: Tensor) -> tuple[Tensor, Tensor]:
        Z = self.Z.expand(*x.shape[:-2], *self.Z.shape)
        V = torch.linalg.solve_triangular(self.L, self.k(Z, x), upper=False)   # L^-1 K(Z,X)
        W = torch.linalg.solve_triangular(self.L.mT, V, upper=True).mT        # K(X,Z) K_ZZ^-1
        return W, V

    def row_weights(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``weights`` of many points x (N, d) as row matrices: W (N, M) and V^T (N, M).

        Two GEMMs with the explicit triangular inverse :math:`L^{-1}` (M x M, computed
        once) instead of two triangular solves with N right-hand sides: about 3x faster
        for N in the tens of thousands, the same to rounding.
        """
        V_T = self.whitened_rows(x)                                        # K(X,Z) L^-T
        return V_T @ self.L_inv, V_T                                       # W = K(X,Z) K_ZZ^-1

    def whitened_rows(self, x: Tensor, chunk: int | None = None,
                      dtype: torch.dtype | None = None) -> Tensor:
        """V^T = K(x, Z) L^{-T} (N, M) of points x (N, d), so that W = V^T L^{-1}.

        Kernel and triangular product (``products.times_triangular``) run ``chunk`` rows at
        a time (default: 2^18 / M, a 2 MiB float64 block): the kernel's elementwise passes
        over a (chunk, M) block stay in the CPU caches (about 2x faster at N = 40,000,
        M = 100 on one thread than one pass over all N rows). ``dtype`` (default L's):
        the result's; each block is computed in L's dtype and rounded once, so a float32
        V^T never exists in float64 as a whole (at N = 40,000, M = 200 the 64 MiB of fresh
        float64 pages cost ~15 ms).
        """
        chunk = chunk or max(1, 2**18 // self.Z.shape[0])
        if self.L_inv is None or self.L_inv.device != self.L.device or \
                self.L_inv.dtype != self.L.dtype:               # computed once, after .to()
            eye = torch.eye(self.L.shape[0], dtype=self.L.dtype, device=self.L.device)
            self.L_inv = torch.linalg.solve_triangular(self.L, eye, upper=False)
        dtype = dtype or self.L.dtype
        V_T = torch.empty(*x.shape[:-1], self.L.shape[0], dtype=dtype, device=self.L.device)
        block = V_T if dtype == self.L.dtype else \
            torch.empty(min(chunk, len(x)), self.L.shape[0], dtype=self.L.dtype,
                        device=self.L.device)                  # one block, reused
        for start, x_c in zip(range(0, len(x), chunk), x.split(chunk), strict=True):
            rows = block[start:start + len(x_c)] if block is V_T else block[:len(x_c)]
            times_triangular(self.k(x_c, self.Z, out=rows), self.L_inv.mT, out=rows,
                             lower=False)                      # K(x, Z) L^-T, in place
            if block is not V_T:
                V_T[start:start + len(x_c)] = rows
        return V_T

    def residual(self, x1: Tensor, x2: Tensor, V1: Tensor, V2: Tensor) -> Tensor:
        """Lambda(x1, x2) = K(x1, x2) - V1^T V2."""
        return self.k(x1, x2) - V1.mT @ V2

    def residual_diag(self, x: Tensor, V: Tensor) -> Tensor:
        kdiag = self.base_kernel(x, x, diag=True)
        return kdiag - (V * V).sum(-2)


class LinearBasis(torch.nn.Module):
    """Linear interpolation between the points of a sorted 1-D grid (Lambda = 0)."""

    def __init__(self, Z: Tensor) -> None:
        super().__init__()
        if Z.shape[-1] != 1:
            raise ValueError(f"linear interpolation needs a 1-D grid, got d={Z.shape[-1]}")
        self.register_buffer("Z", Z.clone())
        self.register_buffer("m_Z", torch.zeros(Z.shape[0], dtype=Z.dtype, device=Z.device))

    def m(self, x: Tensor) -> Tensor:
        return torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)

    def weights(self, x: Tensor) -> tuple[Tensor, None]:
        z = self.Z[:, 0]
        t = x[..., 0].clamp(z[0], z[-1])
        right = torch.searchsorted(z, t.contiguous()).clamp(1, len(z) - 1)
        frac = (t - z[right - 1]) / (z[right] - z[right - 1])
        W = torch.zeros(*t.shape, len(z), dtype=x.dtype, device=x.device)
        W.scatter_(-1, (right - 1).unsqueeze(-1), (1 - frac).unsqueeze(-1))
        W.scatter_add_(-1, right.unsqueeze(-1), frac.unsqueeze(-1))
        return W, None

    def row_weights(self, x: Tensor) -> tuple[Tensor, None]:
        return self.weights(x)

    def residual(self, x1: Tensor, x2: Tensor, V1: None, V2: None) -> Tensor:
        return torch.zeros(*x1.shape[:-1], x2.shape[-2], dtype=x1.dtype, device=x1.device)

    def residual_diag(self, x: Tensor, V: None) -> Tensor:
        return torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)


@dataclass
class EmpiricalPrior:
    """A GP prior learned from a corpus: moments on reference points plus interpolation.

    ``mean`` (M,) and ``covariance`` (M, M) are :math:`\\mu_Z, \\Sigma_Z` on
    ``reference_points`` (M, d); ``noise`` is the observation noise variance;
    ``log_likelihoods[t]`` the corpus marginal log-likelihood after EM iteration t+1
    (``initial_log_likelihood`` before the first); ``objectives`` adds the
    inverse-Wishart log-density when that prior was used (what MAP-EM increases).
    """

    reference_points: Tensor
    mean: Tensor
    covariance: Tensor
    noise: float
    basis: ShiftBasis | LinearBasis
    log_likelihoods: list[float] = field(default_factory=list)
    objectives: list[float] = field(default_factory=list)
    initial_log_likelihood: float = math.nan

    @property
    def base_kernel(self) -> Kernel | None:
        return getattr(self.basis, "base_kernel", None)

    @property
    def base_mean(self) -> Mean | None:
        return getattr(self.basis, "base_mean", None)

    def moments(self, x1: Tensor, x2: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Interpolated prior mean at x1 (n,) and covariance Sigma(x1, x2) (n, n')."""
        d = self.reference_points.shape[-1]
        x1 = as_inputs(x1.to(self.mean), d)
        x2 = x1 if x2 is None else as_inputs(x2.to(self.mean), d)
        with torch.no_grad():
            W1, V1 = self.basis.weights(x1)
            W2, V2 = (W1, V1) if x2 is x1 else self.basis.weights(x2)
            mean = self.basis.m(x1) + W1 @ (self.mean - self.basis.m_Z)
            cov = self.basis.residual(x1, x2, V1, V2) + W1 @ self.covariance @ W2.mT
        return mean, cov


def base_prior(reference_points: Tensor, base_kernel: Kernel, base_mean: Mean | None = None,
               noise: float = 1e-4) -> EmpiricalPrior:
    """The base GP written as an EmpiricalPrior (mu_Z = m(Z), Sigma_Z = K(Z, Z))."""
    basis = ShiftBasis(reference_points, base_kernel, base_mean)
    with torch.no_grad():
        K = dense(basis.base_kernel(basis.Z, basis.Z))
    return EmpiricalPrior(basis.Z, basis.m_Z.clone(), K, float(noise), basis)


def shared_grid_prior(grid: Tensor, Y: Tensor, noise: float = 0.0) -> EmpiricalPrior:
    r"""The shared-grid estimator: every curve observed on one grid (n,) or (n, 1).

    :math:`\mu = \frac1S \sum_i y_i`, :math:`\Sigma = \frac1S \sum_i \tilde y_i \tilde y_i^\top`
    with centred curves :math:`\tilde y_i = y_i - \mu` (Y is (S, n)); linear
    interpolation between grid points. ``noise`` is only stored (the empirical
    covariance already contains the observation noise of Y).
    """
    grid = as_inputs(torch.as_tensor(grid), 1)
    Y = torch.as_tensor(Y, dtype=grid.dtype)
    if Y.dim() != 2 or Y.shape[1] != grid.shape[0] or Y.shape[0] < 1:
        raise ValueError(f"Y must be (S, n) with n = {grid.shape[0]} grid points and S >= 1, "
                         f"got {tuple(Y.shape)}")
    if not bool(torch.isfinite(Y).all()):
        raise ValueError("Y has NaN or inf values")
    order = torch.argsort(grid[:, 0])
    grid, Y = grid[order], Y[:, order]
    mu = Y.mean(0)
    centred = Y - mu
    return EmpiricalPrior(grid, mu, centred.mT @ centred / Y.shape[0], float(noise),
                          LinearBasis(grid))
