r"""Predict the transfer gain from graph statistics, recommend a mechanism, check it LODO.

For each mechanism :math:`m` a ridge regression on the standardised statistics
:math:`s_d` of each dataset :math:`d` (:mod:`.stats`) predicts the mean gain
:math:`g_{d,m}` over the single-task baseline:

.. math::  \hat g_{d,m} = b_m + w_m^\top \frac{s_d - \bar s}{\sigma_s}, \qquad
   (w_m, b_m) = \arg\min \sum_{d} (g_{d,m} - \hat g_{d,m})^2 + \alpha \|w_m\|^2 .

The recommendation for a dataset is :math:`\arg\max_m \hat g_{d,m}` over the
candidates, or ``single-task`` when no predicted gain is positive; the observed best
is the same rule on the observed gains. Leave-one-dataset-out (LODO): each dataset in
turn is held out, the predictors are fit on the others, and the held-out dataset's
recommendation is compared with its observed best. Reported: LODO accuracy, the
regret (observed gain of the observed best minus that of the recommendation), and, as
a yardstick, the accuracy of always recommending the choice that is best on average
over the training datasets (which ignores the statistics).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

NO_TRANSFER = "single-task"


def ridge_fit(features: np.ndarray, target: np.ndarray, alpha: float = 1.0) -> dict:
    """Ridge on standardised columns (a constant column gets std 1); returns the model."""
    mean = features.mean(0)
    std = features.std(0)
    std = np.where(std > 1e-12, std, 1.0)
    z = (features - mean) / std
    b = target.mean()
    w = np.linalg.solve(z.T @ z + alpha * np.eye(z.shape[1]), z.T @ (target - b))
    return {"mean": mean, "std": std, "w": w, "b": b}


def ridge_predict(model: dict, features: np.ndarray) -> np.ndarray:
    return model["b"] + ((features - model["mean"]) / model["std"]) @ model["w"]


def best_choice(gains: Mapping[str, float]) -> str:
    """The mechanism of highest finite gain, or ``single-task`` when none is positive."""
    finite = {m: g for m, g in gains.items() if math.isfinite(g)}
    if not finite or max(finite.values()) <= 0:
        return NO_TRANSFER
    return max(finite, key=finite.get)


def predict_gains(gains: Mapping[str, Mapping[str, float]],
                  features: Mapping[str, Sequence[float]], train: Sequence[str],
                  predict: Sequence[str], alpha: float = 1.0) -> dict[str, dict[str, float]]:
    """Per mechanism, fit on ``train`` datasets and predict the gains of ``predict`` ones."""
    mechanisms = sorted({m for d in train for m in gains[d]})
    out: dict[str, dict[str, float]] = {d: {} for d in predict}
    for m in mechanisms:
        rows = [d for d in train if math.isfinite(gains[d].get(m, math.nan))]
        if len(rows) < 2:
            continue
        model = ridge_fit(np.array([features[d] for d in rows], float),
                          np.array([gains[d][m] for d in rows], float), alpha)
        predicted = ridge_predict(model, np.array([features[d] for d in predict], float))
        for d, value in zip(predict, predicted, strict=True):
            out[d][m] = float(value)
    return out


def recommend(gains: Mapping[str, Mapping[str, float]],
              features: Mapping[str, Sequence[float]], alpha: float = 1.0) -> dict[str, dict]:
    """In-sample: the predictor fit on every dataset, its recommendation for each."""
    datasets = sorted(gains)
    predicted = predict_gains(gains, features, datasets, datasets, alpha)
    return {d: {"recommended": best_choice(predicted[d]), "predicted": predicted[d],
                "observed_best": best_choice(gains[d])} for d in datasets}


def _gain_of(choice: str, gains: Mapping[str, float]) -> float:
    return 0.0 if choice == NO_TRANSFER else gains.get(choice, math.nan)


def leave_one_dataset_out(gains: Mapping[str, Mapping[str, float]],
                          features: Mapping[str, Sequence[float]],
                          alpha: float = 1.0) -> dict:
    """LODO accuracy and regret of the recommendation, beside the average-best yardstick."""
    datasets = sorted(gains)
    rows, hits, yardstick_hits, regrets = {}, 0, 0, []
    if len(datasets) < 3:
        return {"datasets": {}, "accuracy": math.nan, "yardstick_accuracy": math.nan,
                "mean_regret": math.nan, "n": len(datasets)}
    for held in datasets:
        train = [d for d in datasets if d != held]
        predicted = predict_gains(gains, features, train, [held], alpha)[held]
        choice, actual = best_choice(predicted), best_choice(gains[held])
        means = {m: float(np.nanmean([gains[d].get(m, math.nan) for d in train]))
                 for m in {m for d in train for m in gains[d]}}
        yardstick = best_choice(means)
        regret = _gain_of(actual, gains[held]) - _gain_of(choice, gains[held])
        hits += choice == actual
        yardstick_hits += yardstick == actual
        regrets.append(regret)
        rows[held] = {"recommended": choice, "observed_best": actual, "yardstick": yardstick,
                      "regret": regret, "predicted": predicted}
    n = len(datasets)
    return {"datasets": rows, "accuracy": hits / n, "yardstick_accuracy": yardstick_hits / n,
            "mean_regret": float(np.nanmean(regrets)), "n": n}


def linear_trend(x: Sequence[float], y: Sequence[float], level: float = 0.95) -> dict:
    """OLS slope of ``y`` on ``x`` with its two-sided t confidence interval."""
    from scipy import stats

    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = len(x)
    if n < 3 or np.ptp(x) == 0:
        return {"slope": math.nan, "low": math.nan, "high": math.nan, "intercept": math.nan,
                "n": n}
    xc = x - x.mean()
    slope = float(xc @ (y - y.mean()) / (xc @ xc))
    intercept = float(y.mean() - slope * x.mean())
    residual = y - (intercept + slope * x)
    se = math.sqrt(float(residual @ residual) / (n - 2) / float(xc @ xc))
    half = float(stats.t.ppf(0.5 + level / 2, n - 2)) * se
    return {"slope": slope, "low": slope - half, "high": slope + half,
            "intercept": intercept, "n": n}
