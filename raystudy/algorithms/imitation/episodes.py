"""One episode type for every offline-RL source, and flat transition arrays to sample from.

An :class:`Episode` holds ``T`` transitions ``(s_t, a_t, r_t, s_{t+1}, terminal_t)`` as
arrays of length ``T`` and says whether it ended by a time limit (``timeout``): a
terminal step means the MDP ended (no bootstrapping from ``s_{t+1}``), a timeout means
the episode was cut and ``s_T`` is an ordinary state. An episode with neither was cut
by the end of its file.

Shapes: ``observations`` and ``next_observations`` ``T x obs_dim`` (float32),
``actions`` ``T x act_dim`` (float32), ``rewards`` ``T`` (float32), ``terminals`` ``T``
(bool; only the last entry may be True). A piece cut out of an episode (a slice of
consecutive transitions, ``compose.py``) has ``first=False`` when it does not start at the
episode's first step, so its first observation is not an initial state.

:class:`Transitions` stacks episodes into flat arrays (what learners sample minibatches
from) and keeps the episodes' first observations, the initial-state distribution the
DICE methods need.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

FIELDS = ("observations", "actions", "rewards", "next_observations", "terminals")


@dataclass(frozen=True)
class Episode:
    """``T`` transitions of one episode; ``timeout``: it ended by a time limit."""

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_observations: np.ndarray
    terminals: np.ndarray
    timeout: bool = False
    first: bool = True
    """Starts at the episode's first step (its first observation is an initial state)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "observations", np.asarray(self.observations, np.float32))
        object.__setattr__(self, "next_observations",
                           np.asarray(self.next_observations, np.float32))
        actions = np.asarray(self.actions, np.float32)
        object.__setattr__(self, "actions", actions.reshape(len(actions), -1))
        object.__setattr__(self, "rewards", np.asarray(self.rewards, np.float32).reshape(-1))
        object.__setattr__(self, "terminals", np.asarray(self.terminals, bool).reshape(-1))
        object.__setattr__(self, "timeout", bool(self.timeout))
        object.__setattr__(self, "first", bool(self.first))
        lengths = {name: len(getattr(self, name)) for name in FIELDS}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"episode arrays have different lengths: {lengths}")
        if self.observations.shape != self.next_observations.shape:
            raise ValueError("observations and next_observations differ in shape: "
                             f"{self.observations.shape} vs {self.next_observations.shape}")
        if self.terminals[:-1].any():
            raise ValueError("a terminal step before the last step of an episode")

    def __len__(self) -> int:
        return len(self.rewards)

    @property
    def episode_return(self) -> float:
        """Undiscounted return: the sum of rewards."""
        return float(self.rewards.sum(dtype=np.float64))

    @property
    def terminated(self) -> bool:
        """Whether the MDP ended at the last step (as opposed to a time limit or a cut)."""
        return bool(len(self) and self.terminals[-1])


@dataclass
class Transitions:
    """Flat transition arrays of a list of episodes, plus each episode's first observation
    (of the episodes that start at their first step: pieces cut mid-episode have none)."""

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_observations: np.ndarray
    terminals: np.ndarray
    initial_observations: np.ndarray

    @classmethod
    def from_episodes(cls, episodes: Sequence[Episode]) -> Transitions:
        episodes = [e for e in episodes if len(e)]
        if not episodes:
            raise ValueError("no transitions: every episode is empty")
        starts = [e.observations[0] for e in episodes if e.first]
        dim = episodes[0].observations.shape[1]
        return cls(*(np.concatenate([getattr(e, f) for e in episodes]) for f in FIELDS),
                   initial_observations=(np.stack(starts) if starts
                                         else np.zeros((0, dim), np.float32)))

    def __len__(self) -> int:
        return len(self.rewards)

    def as_array(self) -> np.ndarray:
        """One float32 row per transition: ``[s | a | r | s' | terminal]`` (for Ray Data)."""
        return np.concatenate([self.observations, self.actions, self.rewards[:, None],
                               self.next_observations,
                               self.terminals[:, None].astype(np.float32)], axis=1)

    @classmethod
    def from_array(cls, rows: np.ndarray, obs_dim: int) -> Transitions:
        """Inverse of :meth:`as_array` (initial observations: none are known, so ``s``)."""
        act_dim = rows.shape[1] - 2 * obs_dim - 2
        obs, act = rows[:, :obs_dim], rows[:, obs_dim:obs_dim + act_dim]
        rew = rows[:, obs_dim + act_dim]
        nxt = rows[:, obs_dim + act_dim + 1:2 * obs_dim + act_dim + 1]
        return cls(obs, act, rew, nxt, rows[:, -1] > 0.5, initial_observations=obs)

    def sample(self, rng: np.random.Generator, n: int,
               device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
        """``n`` transitions drawn uniformly with replacement, as float32 tensors."""
        index = rng.integers(0, len(self), size=n)
        out = {f: torch.as_tensor(getattr(self, f)[index], dtype=torch.float32, device=device)
               for f in FIELDS}
        return out

    def sample_initial(self, rng: np.random.Generator, n: int,
                       device: torch.device | str = "cpu") -> torch.Tensor:
        """``n`` initial observations drawn uniformly with replacement."""
        index = rng.integers(0, len(self.initial_observations), size=n)
        return torch.as_tensor(self.initial_observations[index], device=device)


def returns(episodes: Sequence[Episode]) -> np.ndarray:
    """Undiscounted return of each episode."""
    return np.array([e.episode_return for e in episodes], dtype=np.float64)
