"""Roll policies out in gymnasium environments: data generation and deterministic evaluation.

A policy here is any callable ``obs -> action`` in the environment's own units (a
``obs_dim`` array in, an ``act_dim`` array out). Episode ``i`` of a call is reset with
seed ``seed + i``, so a set of episodes is reproducible and evaluation seeds can be kept
apart from the seeds the data was generated with.

:func:`evaluate_episodes` is a module-level function of one picklable item, so a caller
can spread evaluation episodes over processes (``ctx.map`` in a study) and get the same
returns as a serial loop.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .episodes import Episode

Policy = Callable[[np.ndarray], np.ndarray]


def make_env(env_id: str) -> Any:
    """``gymnasium.make(env_id)``; ``"Name-vN(key=value, ...)"`` passes the keyword
    arguments (Python literals) to ``gymnasium.make``. An unknown id is a ValueError."""
    import gymnasium as gym

    name, _, arguments = env_id.partition("(")
    kwargs = {}
    if arguments:
        call = ast.parse(f"f({arguments}", mode="eval").body
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    try:
        return gym.make(name, **kwargs)
    except gym.error.Error as exc:
        raise ValueError(f"environment {env_id!r}: {exc}") from None


def rollout(env: Any, policy: Policy, seed: int, max_steps: int | None = None) -> Episode:
    """One episode of ``policy`` in ``env`` from ``env.reset(seed=seed)``."""
    obs, _ = env.reset(seed=int(seed))
    low, high = env.action_space.low, env.action_space.high
    rows: dict[str, list] = {"o": [], "a": [], "r": [], "n": []}
    terminated = truncated = False
    while not (terminated or truncated):
        action = np.clip(np.asarray(policy(obs), dtype=np.float32).reshape(low.shape), low, high)
        nxt, reward, terminated, truncated, _ = env.step(action)
        rows["o"].append(obs)
        rows["a"].append(action)
        rows["r"].append(reward)
        rows["n"].append(nxt)
        obs = nxt
        if max_steps is not None and len(rows["r"]) >= max_steps:
            truncated = True
    n = len(rows["r"])
    terminals = np.zeros(n, bool)
    terminals[-1] = bool(terminated)
    return Episode(np.array(rows["o"]), np.array(rows["a"]), np.array(rows["r"]),
                   np.array(rows["n"]), terminals, timeout=bool(truncated and not terminated))


def collect(env_id: str, policy: Policy, episodes: int, seed: int = 0) -> list[Episode]:
    """``episodes`` episodes of ``policy``, reset with seeds ``seed, seed + 1, ...``."""
    env = make_env(env_id)
    try:
        return [rollout(env, policy, seed + i) for i in range(episodes)]
    finally:
        env.close()


@dataclass(frozen=True)
class EvalItem:
    """Evaluation episodes to run in one place: the env, their reset seeds, the policy."""

    env_id: str
    seeds: tuple[int, ...]
    make_policy: Callable[[], Policy]


def evaluate_episodes(item: EvalItem) -> list[float]:
    """Returns of the item's episodes, one per seed (picklable, for ``ctx.map``)."""
    import torch

    torch.set_num_threads(1)
    env = make_env(item.env_id)
    policy = item.make_policy()
    try:
        return [rollout(env, policy, seed).episode_return for seed in item.seeds]
    finally:
        env.close()


def split_seeds(seeds: list[int], parts: int) -> list[tuple[int, ...]]:
    """``seeds`` dealt round-robin into at most ``parts`` non-empty groups."""
    parts = max(1, min(parts, len(seeds)))
    return [tuple(seeds[i::parts]) for i in range(parts)]
