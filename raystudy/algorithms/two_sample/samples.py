r"""The two samples: input checks, the square-root map to the sphere, the result type.

Compositional data are rows of the simplex
:math:`\Delta^{D-1} = \{x \in \mathbb{R}^D : x_j \ge 0,\ \sum_j x_j = 1\}`; exact zeros
are allowed. The square-root map

.. math::  u = \sqrt{x} = (\sqrt{x_1}, \dots, \sqrt{x_D}) \in S^{D-1}_+ ,

sends them to the closed positive orthant of the unit sphere
:math:`S^{q}`, :math:`q = D - 1` (:math:`\|u\|^2 = \sum_j x_j = 1`), with no logarithm,
so zeros are harmless. Directional data arrive as unit vectors of :math:`\mathbb{R}^D`.
Whether the paper (ICML 2026 poster 64099; no full text public) maps by :math:`\sqrt{x}`
is not public: the square root is raystudy's reading, the standard bridge between
compositional and directional data.

Every test of this package accepts one replicate, ``x`` of shape ``(n, D)`` and ``y`` of
shape ``(m, D)``, or a batch of ``R`` replicates, ``(R, n, D)`` and ``(R, m, D)``, and
returns a :class:`TwoSampleResult` whose fields are floats or arrays of shape ``(R,)``.
Inputs may be float32 or float64; the arithmetic is float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DATA_KINDS = ("compositional", "directional")


@dataclass(frozen=True)
class TwoSampleResult:
    """The outcome of a two-sample test of :math:`H_0: P = Q` (floats, or arrays ``(R,)``)."""

    statistic: float | np.ndarray
    """The test's statistic (for the studentized tests, the approximately N(0,1) value)."""
    pvalue: float | np.ndarray
    """Its p-value; NaN where the statistic is undefined (a zero variance estimate)."""
    reject: bool | np.ndarray
    """``pvalue <= alpha`` (False where the p-value is NaN)."""
    method: str
    """Which test, as named in :data:`raystudy.algorithms.two_sample.batch.METHODS`."""


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float in (0, 1), or a ValueError."""
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}.")
    return float(alpha)


def check_data_kind(data: str) -> str:
    """``data`` is ``"compositional"`` or ``"directional"``, or a ValueError."""
    if data not in DATA_KINDS:
        raise ValueError(f"data must be one of {DATA_KINDS}, got {data!r}.")
    return data


def _as_array(a, name: str) -> tuple[np.ndarray, float]:
    """``a`` as float64 with a batch axis, and the tolerance its input dtype allows."""
    try:
        arr = np.asarray(a)
        tol = 1e-6 if arr.dtype == np.float64 else 1e-4
        arr = arr.astype(np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array, got {type(a).__name__}.") from err
    if arr.ndim not in (2, 3):
        raise ValueError(f"{name} must have shape (n, D) or (R, n, D), got {arr.shape}.")
    return (arr[None] if arr.ndim == 2 else arr), tol


def check_samples(x, y, *, data: str = "compositional", min_points: int = 2,
                  method: str = "this test") -> tuple[np.ndarray, np.ndarray, bool]:
    """Validate two samples; return them as float64 batches ``(R, n, D)``, ``(R, m, D)``.

    Args:
        x: ``(n, D)`` or ``(R, n, D)`` compositions (rows on the simplex) or unit vectors.
        y: ``(m, D)`` or ``(R, m, D)``, the same kind and ``D``.
        data: ``"compositional"`` (rows >= 0 summing to 1) or ``"directional"`` (unit rows).
        min_points: the fewest rows per sample the calling test needs.
        method: the caller's name, for the error message.

    Returns:
        ``(X, Y, batched)``: compositions closed exactly (tiny negatives clipped), unit
        vectors renormalised; ``batched`` is False when both inputs were 2-D.

    Raises:
        ValueError: one sentence naming the first problem found (shape, D mismatch, too few
        points, NaN or inf, a row off the simplex or the sphere).
    """
    check_data_kind(data)
    ndims = (np.ndim(x), np.ndim(y))
    X, tol_x = _as_array(x, "x")
    Y, tol_y = _as_array(y, "y")
    if ndims[0] != ndims[1]:
        raise ValueError(f"x and y must both be 2-D or both 3-D, got {ndims[0]}-D and "
                         f"{ndims[1]}-D.")
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"x and y hold different numbers of replicates ({X.shape[0]} and "
                         f"{Y.shape[0]}).")
    if X.shape[2] != Y.shape[2]:
        raise ValueError(f"x has D = {X.shape[2]} columns but y has D = {Y.shape[2]}.")
    if X.shape[2] < 2:
        raise ValueError(f"the data need D >= 2 columns, got D = {X.shape[2]}.")
    for name, A, tol in (("x", X, tol_x), ("y", Y, tol_y)):
        if A.shape[1] < min_points:
            raise ValueError(f"{method} needs at least {min_points} points per sample, got "
                             f"{A.shape[1]} in {name}.")
        if not np.isfinite(A).all():
            raise ValueError(f"{name} contains NaN or infinite values.")
        if data == "compositional":
            if A.min() < -tol:
                raise ValueError(f"{name} has negative entries ({A.min():.3g}), so its rows are "
                                 "not on the simplex.")
            gap = np.abs(A.sum(axis=-1) - 1.0).max()
            if gap > tol:
                raise ValueError(f"{name} has rows that do not sum to 1 (largest |sum - 1| = "
                                 f"{gap:.3g}); close counts to proportions first.")
        else:
            gap = np.abs(np.linalg.norm(A, axis=-1) - 1.0).max()
            if gap > tol:
                raise ValueError(f"{name} has rows that are not unit vectors (largest "
                                 f"|norm - 1| = {gap:.3g}).")
    if data == "compositional":
        X = np.clip(X, 0.0, None)
        Y = np.clip(Y, 0.0, None)
        X, Y = X / X.sum(-1, keepdims=True), Y / Y.sum(-1, keepdims=True)
    else:
        X = X / np.linalg.norm(X, axis=-1, keepdims=True)
        Y = Y / np.linalg.norm(Y, axis=-1, keepdims=True)
    return X, Y, ndims[0] == 3


def to_sphere(X: np.ndarray, data: str = "compositional") -> np.ndarray:
    r"""The square-root map :math:`u = \sqrt{x}` (compositions) or the identity (directions).

    ``X``: ``(..., D)`` checked rows (see :func:`check_samples`); returns unit rows
    ``(..., D)``.
    """
    if data == "directional":
        return X
    U = np.sqrt(X)
    return U / np.linalg.norm(U, axis=-1, keepdims=True)


def replicate_chunks(R: int, per_replicate: int, budget: int = 2**16) -> list[slice]:
    """Slices of ``range(R)`` whose replicates hold about ``budget`` array entries at most.

    Keeps the batched Gram matrices (``per_replicate`` entries each) inside the cache-sized
    working set where NumPy's elementwise loops run fastest.
    """
    step = max(1, budget // max(1, per_replicate))
    return [slice(i, min(R, i + step)) for i in range(0, R, step)]


def result(statistic: np.ndarray, pvalue: np.ndarray, alpha: float, method: str,
           batched: bool) -> TwoSampleResult:
    """Pack ``(R,)`` arrays into a :class:`TwoSampleResult` (floats when not batched)."""
    statistic = np.asarray(statistic, dtype=np.float64)
    pvalue = np.asarray(pvalue, dtype=np.float64)
    reject = np.where(np.isnan(pvalue), False, pvalue <= alpha)
    if batched:
        return TwoSampleResult(statistic, pvalue, reject, method)
    return TwoSampleResult(float(statistic[0]), float(pvalue[0]), bool(reject[0]), method)

