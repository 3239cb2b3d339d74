"""The paper's data protocol: good, bad and unlabeled sets of whole episodes.

DualCOIL (and the baselines) learn from three sets:

* good ``D_G``: ``good`` expert episodes;
* bad ``D_B``: ``bad`` undesirable episodes (random or medium policy);
* unlabeled ``D_U``: ``unlabeled_bad`` undesirable episodes (all of them by default)
  plus ``unlabeled_expert`` expert episodes, without labels.

The paper's MuJoCo setting is ``random/1/10/30``: 1 expert episode, 10 random ones, and
all random data + 30 expert episodes unlabeled. A mix is written
``SOURCE/GOOD/BAD/UNLABELED_EXPERT[/UNLABELED_BAD]`` (``SOURCE`` random or medium).

Episodes are taken whole, from the start of each source, and (as in the public code)
the good episodes are also the first of the unlabeled expert ones and the bad episodes
the first of the unlabeled undesirable ones; ``overlap=False`` keeps the sets disjoint.
The public code instead slices ``n x 1000`` transitions from the start of
``d4rl.qlearning_dataset``, so where episodes end early (Hopper, Walker2d) one of its
"trajectories" spans several episodes, or part of one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .episodes import Episode, returns

SOURCES = ("random", "medium")


@dataclass(frozen=True)
class MixSpec:
    """How many whole episodes go into the good, bad and unlabeled sets."""

    bad_source: str = "random"
    good: int = 1
    bad: int = 10
    unlabeled_expert: int = 30
    unlabeled_bad: int | None = None
    """Undesirable episodes in the unlabeled set; None: all of the source."""

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

    def unlabeled_expert_mask(self) -> np.ndarray:
        """Per unlabeled transition: True where it came from an expert episode (hidden label)."""
        return np.concatenate([np.full(len(e), flag) for e, flag in
                               zip(self.unlabeled, self.unlabeled_is_expert, strict=True)])


def _describe(episodes: Sequence[Episode]) -> dict[str, Any]:
    values = returns(episodes)
    return {"episodes": len(episodes), "transitions": int(sum(len(e) for e in episodes)),
            "mean_return": float(values.mean()) if len(values) else float("nan")}


def compose(expert: Sequence[Episode], undesirable: Sequence[Episode], spec: MixSpec,
            overlap: bool = True) -> OfflineMix:
    """Build the good, bad and unlabeled sets of ``spec`` from the two sources' episodes."""
    n_bad_unlabeled = (len(undesirable) - (0 if overlap else spec.bad)
                       if spec.unlabeled_bad is None else spec.unlabeled_bad)
    need_expert = max(spec.good, spec.unlabeled_expert) if overlap else \
        spec.good + spec.unlabeled_expert
    need_bad = max(spec.bad, n_bad_unlabeled) if overlap else spec.bad + n_bad_unlabeled
    if len(expert) < need_expert or len(undesirable) < need_bad or n_bad_unlabeled < 0:
        raise ValueError(f"mix {spec.label} (overlap={overlap}) needs {need_expert} expert and "
                         f"{need_bad} {spec.bad_source} episodes; the sources have "
                         f"{len(expert)} and {len(undesirable)}")
    good = list(expert[:spec.good])
    bad = list(undesirable[:spec.bad])
    start_e, start_b = (0, 0) if overlap else (spec.good, spec.bad)
    unl_expert = list(expert[start_e:start_e + spec.unlabeled_expert])
    unl_bad = list(undesirable[start_b:start_b + n_bad_unlabeled])
    unlabeled = unl_bad + unl_expert
    flags = [False] * len(unl_bad) + [True] * len(unl_expert)
    unl = _describe(unlabeled)
    unl.update(expert_episodes=len(unl_expert), undesirable_episodes=len(unl_bad),
               expert_transition_fraction=(sum(len(e) for e in unl_expert)
                                           / max(1, unl["transitions"])))
    record = {"mix": spec.label, "bad_source": spec.bad_source, "overlap": overlap,
              "whole_episodes": True, "good": _describe(good), "bad": _describe(bad),
              "unlabeled": unl}
    return OfflineMix(good, bad, unlabeled, flags, record)
