"""Brute-force references shared by the tests: explicit transition matrices and Bayes' rule
by enumeration (no closed form from the package under test)."""

from __future__ import annotations

import itertools

import numpy as np


def transition(alpha: float, V: int) -> np.ndarray:
    """Q[a, b] = Pr(next = b | previous = a): keep w.p. alpha, else uniform over V."""
    return alpha * np.eye(V) + (1 - alpha) / V * np.ones((V, V))


def bayes_posterior(x: np.ndarray, z_t: int, alpha_s: float, alpha_t: float) -> np.ndarray:
    """q(z_s | z_t, x0 ~ x) by enumerating the joint of (x0, z_s, z_t)."""
    V = len(x)
    Q_s, Q_ts = transition(alpha_s, V), transition(alpha_t / alpha_s, V)
    joint = np.zeros(V)
    for x0, z_s in itertools.product(range(V), range(V)):
        joint[z_s] += x[x0] * Q_s[x0, z_s] * Q_ts[z_s, z_t]
    return joint / joint.sum()
