"""Inputs over T steps: rate and direct encodings of static images, event-to-frame binning.

* ``rate_encode(x, T, gain=0.5)``: Bernoulli spikes with ``p = gain * clamp(x, 0, 1)`` per
  step (the authors' ``ultralif/datasets/encoding.py``); ``T x B x D``.
* ``direct_encode(x, T)``: the same analog frame at every step.
* ``events_to_frames(times, units, n_units, n_bins, t_max)``: event counts per unit in
  ``n_bins`` equal time bins over ``[0, t_max)`` (tonic's ``ToFrame(n_time_bins=T)``, raw
  counts): ``n_bins x n_units``; at one bin, the whole-recording count histogram.
"""

from __future__ import annotations

import numpy as np
import torch


def rate_encode(x: torch.Tensor, T: int, gain: float = 0.5,
                generator: torch.Generator | None = None) -> torch.Tensor:
    p = (gain * x.clamp(0, 1)).expand(T, *x.shape)
    return torch.bernoulli(p, generator=generator)


def direct_encode(x: torch.Tensor, T: int) -> torch.Tensor:
    return x.expand(T, *x.shape).clone()


def events_to_frames(times: np.ndarray, units: np.ndarray, n_units: int, n_bins: int,
                     t_max: float) -> np.ndarray:
    """Counts ``n_bins x n_units`` (float32); events at or after ``t_max`` go to the last bin."""
    bins = np.minimum((np.asarray(times) / t_max * n_bins).astype(np.int64), n_bins - 1)
    flat = bins * n_units + np.asarray(units, np.int64)
    return np.bincount(flat, minlength=n_bins * n_units).reshape(n_bins, n_units).astype(
        np.float32)
