"""The paper's data protocol: good, bad and unlabeled sets.

DualCOIL (and the baselines) learn from three sets:

* good ``D_G``: ``good`` expert episodes;
* bad ``D_B``: ``bad`` undesirable "trajectories" (random or medium policy);
* unlabeled ``D_U``: ``unlabeled_bad`` undesirable trajectories (all the source's data by
  default) plus ``unlabeled_expert`` expert episodes, without labels.

The paper's MuJoCo setting is ``random/1/10/30``: 1 expert episode, 10 random
trajectories, and all random data + 30 expert episodes unlabeled. A mix is written
``SOURCE/GOOD/BAD/UNLABELED_EXPERT[/UNLABELED_BAD]`` (``SOURCE`` random or medium).

An undesirable "trajectory" is, by default (``unit="slice"``), what the authors' code
takes (ContraDICE ``train.py``: ``get_d4rl_dataset(name, n * 1000)``): a slice of
``slice_length`` = 1000 consecutive transitions of the source, slice ``k`` holding
transitions ``[k L, (k + 1) L)`` of the source in file order. A slice runs straight across
episode ends, as theirs does: each transition keeps its own next state and terminal flag,
so a random Hopper slice holds some fifty short episodes (or pieces of them) instead of
one ~20-step episode. It is stored as the pieces of episodes it covers (``Episode`` with
``first=False`` for a piece that starts mid-episode, whose first state is no initial
state). ``unit="episode"`` takes whole episodes instead. Expert episodes are always whole.

Everything is taken from the start of each source, and (as in the public code) the good
episodes are also the first of the unlabeled expert ones and the bad slices the first of
the unlabeled undesirable data; ``overlap=False`` keeps the sets disjoint (the unlabeled
undesirable data then starts after the bad slices).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .episodes import Episode, returns

SOURCES = ("random", "medium")
UNITS = ("slice", "episode")
SLICE_LENGTH = 1000  # transitions per undesirable "trajectory" in the authors' code


@dataclass(frozen=True)
class MixSpec:
    """How many expert episodes and undesirable trajectories go into each set."""

    bad_source: str = "random"
    good: int = 1
    bad: int = 10
    unlabeled_expert: int = 30
    unlabeled_bad: int | None = None
    """Undesirable trajectories in the unlabeled set; None: all of the source."""

    def __post_init__(self) -> None:
        if self.bad_source not in SOURCES:
            raise ValueError(f"mix source {self.bad_source!r} is not one of {', '.join(SOURCES)}")
        if self.good < 1 or self.bad < 1 or self.unlabeled_expert < 0 or (
                self.unlabeled_bad is not None and self.unlabeled_bad < 0):
            raise ValueError(f"mix {self.label}: good and bad need >= 1 episode, the "
                             "unlabeled counts >= 0")

    @classmethod
    def parse(cls, text: str) -> MixSpec:
        """``random/1/10/30`` or ``medium/1/10/30/200`` (see the module docstring)."""
        parts = text.strip().split("/")
        try:
            if len(parts) in (4, 5):
                rest = [int(p) for p in parts[1:4]]
                tail = None if len(parts) == 4 or parts[4] == "all" else int(parts[4])
                return cls(parts[0], *rest, unlabeled_bad=tail)
        except ValueError as exc:
            if "mix" in str(exc):
                raise
        raise ValueError(f"mix {text!r}: expected SOURCE/GOOD/BAD/UNLABELED_EXPERT"
                         "[/UNLABELED_BAD|all] with SOURCE random or medium, e.g. random/1/10/30")

    @property
    def label(self) -> str:
        tail = "" if self.unlabeled_bad is None else f"/{self.unlabeled_bad}"
        return f"{self.bad_source}/{self.good}/{self.bad}/{self.unlabeled_expert}{tail}"


@dataclass
class OfflineMix:
    """The three sets, which source each unlabeled episode came from, and a summary."""

    good: list[Episode]
    bad: list[Episode]
    unlabeled: list[Episode]
    unlabeled_is_expert: list[bool]
    record: dict[str, Any] = field(default_factory=dict)

    def undesirable_share(self) -> float:
        """Share of the unlabeled transitions that came from the undesirable source
        (SafeDICE's ``alpha``, the weight of ``d_N`` in ``d_U``)."""
        return 1.0 - float(self.unlabeled_expert_mask().mean())

    def unlabeled_expert_mask(self) -> np.ndarray:
        """Per unlabeled transition: True where it came from an expert episode (hidden label)."""
        return np.concatenate([np.full(len(e), flag) for e, flag in
                               zip(self.unlabeled, self.unlabeled_is_expert, strict=True)])


def _describe(episodes: Sequence[Episode]) -> dict[str, Any]:
    """Pieces, transitions and the mean return of the whole episodes among them."""
    values = returns([e for e in episodes if e.first and (e.terminated or e.timeout)])
    return {"episodes": len(episodes), "transitions": int(sum(len(e) for e in episodes)),
            "mean_return": float(values.mean()) if len(values) else float("nan")}


def _piece(e: Episode, start: int, stop: int) -> Episode:
    """Transitions ``[start, stop)`` of ``e``; the end flags only where ``e`` ends."""
    last = stop == len(e)
    return Episode(e.observations[start:stop], e.actions[start:stop], e.rewards[start:stop],
                   e.next_observations[start:stop], e.terminals[start:stop],
                   timeout=e.timeout and last, first=e.first and start == 0)


def cut(episodes: Sequence[Episode], length: int) -> list[list[Episode]]:
    """The source's transitions, in order, as consecutive slices of ``length`` transitions
    (the last one shorter if ``length`` does not divide the total), each a list of the
    pieces of episodes it covers; episodes are cut where a slice ends."""
    if length < 1:
        raise ValueError(f"slice length {length} must be >= 1")
    slices: list[list[Episode]] = [[]]
    room = length
    for e in episodes:
        start = 0
        while start < len(e):
            if room == 0:
                slices.append([])
                room = length
            stop = min(len(e), start + room)
            slices[-1].append(e if (start, stop) == (0, len(e)) else _piece(e, start, stop))
            room -= stop - start
            start = stop
    return slices if slices[0] else []


def compose(expert: Sequence[Episode], undesirable: Sequence[Episode], spec: MixSpec,
            overlap: bool = True, unit: Literal["slice", "episode"] = "slice",
            slice_length: int = SLICE_LENGTH) -> OfflineMix:
    """Build the good, bad and unlabeled sets of ``spec`` from the two sources' episodes;
    an undesirable trajectory is a slice of ``slice_length`` transitions or an episode."""
    if unit not in UNITS:
        raise ValueError(f"unit {unit!r} is not one of {', '.join(UNITS)}")
    # the undesirable source as trajectories, each a list of (pieces of) episodes
    trajectories = (cut(undesirable, slice_length) if unit == "slice"
                    else [[e] for e in undesirable])
    whole = ([sum(len(e) for e in t) == slice_length for t in trajectories]
             if unit == "slice" else None)
    n_bad_unlabeled = (len(trajectories) - (0 if overlap else spec.bad)
                       if spec.unlabeled_bad is None else spec.unlabeled_bad)
    need_expert = max(spec.good, spec.unlabeled_expert) if overlap else \
        spec.good + spec.unlabeled_expert
    need_bad = max(spec.bad, n_bad_unlabeled) if overlap else spec.bad + n_bad_unlabeled
    explicit = need_bad if spec.unlabeled_bad is not None else spec.bad
    short = whole is not None and not all(whole[:explicit])  # a counted slice must be full
    what = (f"slices of {slice_length} transitions" if unit == "slice"
            else "episodes")
    if (len(expert) < need_expert or len(trajectories) < need_bad or n_bad_unlabeled < 0
            or short):
        have = (f"{sum(len(e) for e in undesirable)} {spec.bad_source} transitions"
                if unit == "slice" else f"{len(undesirable)}")
        raise ValueError(f"mix {spec.label} (overlap={overlap}) needs {need_expert} expert "
                         f"episodes and {need_bad} {spec.bad_source} {what}; the sources "
                         f"have {len(expert)} and {have}")
    good = list(expert[:spec.good])
    bad = [e for t in trajectories[:spec.bad] for e in t]
    start_e, start_b = (0, 0) if overlap else (spec.good, spec.bad)
    unl_expert = list(expert[start_e:start_e + spec.unlabeled_expert])
    unl_bad = [e for t in trajectories[start_b:start_b + n_bad_unlabeled] for e in t]
    unlabeled = unl_bad + unl_expert
    flags = [False] * len(unl_bad) + [True] * len(unl_expert)
    unl = _describe(unlabeled)
    unl.update(expert_episodes=len(unl_expert), undesirable_episodes=len(unl_bad),
               expert_transition_fraction=(sum(len(e) for e in unl_expert)
                                           / max(1, unl["transitions"])))
    record = {"mix": spec.label, "bad_source": spec.bad_source, "overlap": overlap,
              "unit": unit, "slice_length": slice_length if unit == "slice" else None,
              "whole_episodes": unit == "episode", "good": _describe(good),
              "bad": {**_describe(bad), "trajectories": spec.bad}, "unlabeled": unl}
    mix = OfflineMix(good, bad, unlabeled, flags, record)
    unl["undesirable_transition_fraction"] = mix.undesirable_share()
    return mix
