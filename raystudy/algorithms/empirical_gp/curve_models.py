r"""Parametric learning-curve models fitted per curve: the learning-curve baselines.

Two of the parametric families of learning-curve extrapolation work (Domhan, Springenberg
& Hutter 2015, Table 1; the LC-PFN baselines, Adriaensen et al. 2023), over epochs t >= 1:

* ``pow3``: :math:`y = a - b\,t^{-c}` (a: the asymptote, b: the gap at t = 1, c > 0);
* ``log_power``: :math:`y = a / (1 + (t / e^{b})^{-c})` (Domhan et al.'s
  :math:`a / (1 + (t/e^b)^{c})` with c's sign flipped, so c > 0 rises).

Each curve's observed prefix (t_1..t_n, y_1..y_n) is fitted by least squares
(``scipy.optimize.least_squares``, trust-region reflective, analytic Jacobian, started at
the best point of a grid over the nonlinear parameters with the linear ones in closed
form) and extrapolated. Its predictive variance is the nonlinear-regression one
(delta method): :math:`\sigma^2 (1 + g_t^\top (J^\top J)^{-1} g_t)` with
:math:`\sigma^2 = \mathrm{SSE} / (n - 3)`, J the Jacobian on the prefix and g_t the
gradient at t. Domhan et al. and LC-PFN sample the parameters by MCMC instead; this is the
least-squares point fit with its Gaussian error band.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

CURVE_MODELS = ("pow3", "log_power")
PARAMETERS = 3
MIN_VARIANCE = 1e-8
"""Floor of sigma^2 (a prefix fitted exactly would claim zero uncertainty)."""


def curve(model: str, t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The model's curve at epochs t for parameters p = (a, b, c)."""
    a, b, c = p
    if model == "pow3":
        return a - b * t ** (-c)
    if model == "log_power":
        return a / (1 + np.exp(-c * (np.log(t) - b)))
    raise ValueError(f"curve model {model!r} is not one of {', '.join(CURVE_MODELS)}")


def jacobian(model: str, t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """d curve / d (a, b, c) at epochs t: (len(t), 3)."""
    a, b, c = p
    if model == "pow3":
        power = t ** (-c)
        return np.stack([np.ones_like(t), -power, b * power * np.log(t)], axis=-1)
    u = np.exp(-c * (np.log(t) - b))                  # (t / e^b)^(-c)
    s = 1 / (1 + u)
    return np.stack([s, -a * c * u * s * s, a * (np.log(t) - b) * u * s * s], axis=-1)


# (lower, upper) bounds of (a, b, c): finite where the model degenerates
BOUNDS = {"pow3": ([-np.inf, -np.inf, 0.0], [np.inf, np.inf, 10.0]),
          "log_power": ([-np.inf, -10.0, 0.0], [np.inf, 10.0, 20.0])}


def grid_start(model: str, t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The starting point: the best of a grid over the nonlinear parameters, the linear ones
    (pow3: a, b; log_power: a) solved in closed form at each grid point (variable projection).
    """
    if model == "pow3":
        best = None
        for c in np.geomspace(1e-2, 10.0, 48):
            X = np.stack([np.ones_like(t), -t ** (-c)], axis=-1)
            (a, b), *_ = np.linalg.lstsq(X, y, rcond=None)
            sse = float(np.sum((X @ np.array([a, b]) - y) ** 2))
            if best is None or sse < best[0]:
                best = (sse, np.array([a, b, c]))
        return best[1]
    b, c = np.meshgrid(np.linspace(-2.0, 6.0, 33), np.geomspace(0.1, 10.0, 24), indexing="ij")
    S = 1 / (1 + np.exp(-c[..., None] * (np.log(t) - b[..., None])))      # (33, 24, n)
    a = (S @ y) / np.maximum(np.sum(S * S, -1), 1e-300)
    i = np.unravel_index(np.argmin(np.sum((a[..., None] * S - y) ** 2, -1)), a.shape)
    return np.array([a[i], b[i], c[i]])


@dataclass
class CurveFit:
    """Least-squares parameters (a, b, c), sigma^2 and (J^T J)^+ of one curve's prefix."""

    model: str
    params: np.ndarray
    sigma2: float
    inverse_information: np.ndarray

    def predict(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and variance of y (noise included) at epochs t (delta method)."""
        g = jacobian(self.model, t, self.params)
        spread = np.einsum("ti,ij,tj->t", g, self.inverse_information, g)
        return curve(self.model, t, self.params), self.sigma2 * (1 + spread)


def fit_curve(model: str, t: np.ndarray, y: np.ndarray) -> CurveFit:
    """Fit ``model`` to one observed prefix y (n,) at epochs t (n,), n > 3, by least squares."""
    t, y = np.asarray(t, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if model not in CURVE_MODELS:
        raise ValueError(f"curve model {model!r} is not one of {', '.join(CURVE_MODELS)}")
    if len(t) <= PARAMETERS or t.shape != y.shape or (t < 1).any():
        raise ValueError(f"need more than {PARAMETERS} points at epochs t >= 1, got t "
                         f"{t.shape}, y {y.shape}")
    lower, upper = BOUNDS[model]
    best = least_squares(lambda p: curve(model, t, p) - y, grid_start(model, t, y),
                         jac=lambda p: jacobian(model, t, p), bounds=(lower, upper),
                         method="trf", x_scale="jac", max_nfev=100)
    J = jacobian(model, t, best.x)
    sigma2 = max(2 * best.cost / (len(t) - PARAMETERS), MIN_VARIANCE)
    return CurveFit(model, best.x, sigma2, np.linalg.pinv(J.T @ J))


def fit_and_extrapolate(model: str, t: np.ndarray, Y: np.ndarray, t_new: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Fit each row of Y (B, n) observed at epochs t (n,); mean and variance at t_new (B, m)."""
    preds = [fit_curve(model, t, y).predict(np.asarray(t_new, dtype=np.float64)) for y in Y]
    return np.stack([p[0] for p in preds]), np.stack([p[1] for p in preds])
