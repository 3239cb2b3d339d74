"""Yearly snapshots of the generated world, as byte rows of ``seq_len + 1``.

Snapshot t (year ``years[t]``) holds ``n_rows`` rows (equal size every year). A row is a
run of newline-separated statements cut at ``seq_len + 1`` bytes, each statement drawn as

* a fact statement (share ``fact_share``), about a kept (e, r) chosen by popularity:
  with probability ``hist_share`` (the "factual repetition" knob) a **historical** dated
  statement about a year s < t, weight ``decay ** (t - s)``; otherwise a **current** one,
  dated ("In 2021, the coach of Kelvor was Brasti.") with probability ``dated_share``,
  else undated ("The coach of Kelvor is Brasti.");
* a time-invariant fact (share ``invariant_share``): "Kelvor is in Ostra.";
* otherwise neutral filler: a window of 24-48 bytes of general text (``filler``).

Shapes: ``snapshot`` returns ``n_rows x (seq_len + 1)`` uint8.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .world import World


def dated(world: World, e: int, r: int, year: int) -> str:
    return f"In {year}, the {world.relations[r]} of {world.entities[e]} was"


def undated(world: World, e: int, r: int) -> str:
    return f"The {world.relations[r]} of {world.entities[e]} is"


def located(world: World, e: int) -> str:
    return f"{world.entities[e]} is in"


@dataclass(frozen=True)
class Mixture:
    fact_share: float = 0.6
    hist_share: float = 0.2
    dated_share: float = 0.7
    decay: float = 0.7
    invariant_share: float = 0.15

    def __post_init__(self) -> None:
        if self.fact_share + self.invariant_share > 1 + 1e-12:
            raise ValueError("fact_share + invariant_share must be <= 1")
        for name in ("fact_share", "hist_share", "dated_share", "decay", "invariant_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1]")


def _filler(filler: np.ndarray, rng: np.random.Generator) -> str:
    n = int(rng.integers(24, 49))
    start = int(rng.integers(0, max(1, len(filler) - n)))
    chunk = bytes(filler[start:start + n]).decode("ascii", "replace")
    return "".join(c if c.isprintable() and c.isascii() else " " for c in chunk)


def statement(world: World, t: int, mix: Mixture, filler: np.ndarray,
              rng: np.random.Generator) -> str:
    """One statement of snapshot ``t`` (see the module docstring)."""
    u = rng.random()
    if u < mix.fact_share:
        weights = world.popularity[[e for e, _ in world.kept]]
        pick = int(np.searchsorted(np.cumsum(weights) / weights.sum(), rng.random(), "right"))
        e, r = world.kept[min(pick, len(world.kept) - 1)]
        if t > 0 and rng.random() < mix.hist_share:
            w = mix.decay ** (t - np.arange(t))  # years s < t, weight decay^(t - s)
            s = int(rng.choice(t, p=w / w.sum())) if w.sum() > 0 else t - 1
            return f"{dated(world, e, r, world.years[s])} {world.value(e, r, world.years[s])}."
        if rng.random() < mix.dated_share:
            year = world.years[t]
            return f"{dated(world, e, r, year)} {world.value(e, r, year)}."
        return f"{undated(world, e, r)} {world.value(e, r, world.years[t])}."
    if u < mix.fact_share + mix.invariant_share:
        e = int(rng.integers(len(world.entities)))
        return f"{located(world, e)} {world.places[int(world.invariant[e])]}."
    return _filler(filler, rng)


def snapshot(world: World, t: int, n_rows: int, seq_len: int, mix: Mixture,
             filler: np.ndarray, seed: int) -> np.ndarray:
    """Snapshot ``t``: ``n_rows x (seq_len + 1)`` uint8 rows, each starting at a newline."""
    rng = np.random.default_rng([seed, t])
    rows = np.zeros((n_rows, seq_len + 1), dtype=np.uint8)
    for i in range(n_rows):
        text = ""
        while len(text) < seq_len + 1:
            text += "\n" + statement(world, t, mix, filler, rng)
        rows[i] = np.frombuffer(text[:seq_len + 1].encode("ascii"), dtype=np.uint8)
    return rows


def filler_rows(filler: np.ndarray, n_rows: int, seq_len: int, seed: int) -> np.ndarray:
    """``n_rows`` rows of filler statements only (the general-text validation set)."""
    rng = np.random.default_rng([seed, 10_007])
    rows = np.zeros((n_rows, seq_len + 1), dtype=np.uint8)
    for i in range(n_rows):
        text = ""
        while len(text) < seq_len + 1:
            text += "\n" + _filler(filler, rng)
        rows[i] = np.frombuffer(text[:seq_len + 1].encode("ascii"), dtype=np.uint8)
    return rows


def split_filler(text: np.ndarray, val_fraction: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous train / validation parts of the filler bytes (disjoint by construction)."""
    cut = int(len(text) * (1 - val_fraction))
    return text[:cut], text[cut:]
