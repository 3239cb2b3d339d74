"""Interleaved timing of operator candidates (shared by bench/wbmm_op.py and the study).

Each repetition runs every candidate once, in an order shuffled per repetition, so slow
drift of a shared machine falls on all candidates alike. CPU: process CPU time
(``time.process_time``, one torch thread is the caller's choice) or wall time; CUDA:
``torch.cuda.Event`` pairs after a synchronize, with warm-up calls first.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import torch


def time_once(fn: Callable[[], object], device: str, clock: str = "cpu") -> float:
    """Milliseconds of one call of ``fn``."""
    if device.startswith("cuda"):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        return float(start.elapsed_time(end))
    tick = time.process_time if clock == "cpu" else time.perf_counter
    t0 = tick()
    fn()
    return (tick() - t0) * 1e3


def interleaved(candidates: dict[str, Callable[[], object]], reps: int, warmup: int = 1,
                device: str = "cpu", clock: str = "cpu", seed: int = 0,
                done: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """``reps`` interleaved repetitions: name -> ms per repetition (``done`` continues a
    resumed block: its repetitions count, warm-up runs again)."""
    out = {k: list(v) for k, v in (done or {}).items()}
    for name in candidates:
        out.setdefault(name, [])
    for fn in candidates.values():
        for _ in range(warmup):
            fn()
    rng = random.Random(seed)
    order = list(candidates)
    for rep in range(min(len(v) for v in out.values()), reps):
        rng.seed(seed * 100_003 + rep)
        rng.shuffle(order)
        for name in order:
            if len(out[name]) <= rep:
                out[name].append(time_once(candidates[name], device, clock))
    return out
