"""Row orders over the same multiset of rows, and the one learning-rate schedule.

The pool is T snapshots of n rows each; a row is named ``(year index t, row i)``. Every
schedule returns a permutation of all ``T * n`` rows (``order``: ``(T * n) x 2``), so every
schedule trains on the same rows for the same number of steps; consecutive
``batch_size`` rows make one step, and a year boundary is every ``n`` rows.

* ``sequential``: snapshots in year order, rows shuffled within a snapshot;
* ``shuffled``: one global shuffle;
* ``reverse``: snapshots in anti-chronological order, shuffled within;
* ``shuffled_upto/t``: years ``0..t`` shuffled together, then the later years in order
  (raystudy's reading of the checkpoint name ``shuffle_eq_YEAR``);
* ``replay/rho``: sequential, but each row moves with probability rho to a uniformly
  random later position (so later batches replay earlier years); **not in the paper**,
  a continual-learning control.
"""

from __future__ import annotations

import math

import numpy as np

BASE_SCHEDULES = ("sequential", "shuffled", "reverse")


def parse(name: str) -> tuple[str, float]:
    """``"replay/0.1"`` -> ``("replay", 0.1)``; a bare name -> ``(name, nan)``."""
    base, _, arg = name.partition("/")
    if base in BASE_SCHEDULES and not arg:
        return base, math.nan
    if base in ("replay", "shuffled_upto") and arg:
        try:
            value = float(arg)
        except ValueError:
            value = math.nan
        if base == "replay" and 0.0 <= value <= 1.0:
            return base, value
        if base == "shuffled_upto" and math.isfinite(value) and value == int(value) >= 0:
            return base, value
    raise ValueError(f"unknown schedule {name!r}: sequential, shuffled, reverse, "
                     "shuffled_upto/T (a year index), replay/RHO (0 <= rho <= 1)")


def order(name: str, n_years: int, n_rows: int, seed: int) -> np.ndarray:
    """``(n_years * n_rows) x 2`` array of (year index, row index), the training order."""
    base, arg = parse(name)
    rng = np.random.default_rng([seed, 7])
    t = np.repeat(np.arange(n_years), n_rows)
    i = np.tile(np.arange(n_rows), n_years)
    u = rng.random(t.size)  # the within-block position of every row
    if base == "shuffled":
        key = u
    elif base == "reverse":
        key = (n_years - 1 - t) + u
    elif base == "shuffled_upto":
        upto = min(int(arg), n_years - 1)
        key = np.where(t <= upto, u * (upto + 1), t + u)
    elif base == "replay":
        moved = rng.random(t.size) < arg
        later = t + rng.random(t.size) * (n_years - t)  # uniform over [t, T)
        key = np.where(moved, later, t + u)
    else:  # sequential
        key = t + u
    perm = np.argsort(key, kind="stable")
    return np.stack([t[perm], i[perm]], axis=1)


def wsd_lr(step: int, total: int, lr: float, warmup: int, cooldown: float = 0.1) -> float:
    """Warmup-stable-decay: linear warmup over ``warmup`` steps, constant, then a linear
    cooldown to 0 over the last ``cooldown`` share of ``total`` (the same for every
    schedule). ``step`` counts from 1."""
    if step <= warmup:
        return lr * step / max(1, warmup)
    start = total - int(round(cooldown * total))
    if step > start:
        return lr * max(0.0, (total - step) / max(1, total - start))
    return lr
