"""Gymnasium environments whose dynamics change at every task boundary.

``env.set_task(t)`` switches to task ``t``; what changes is drawn from a generator seeded
by ``(seed, t)``, so every run with the same seed sees the same sequence of tasks.

* :class:`ChangingClassicControl` (``CartPole-v1``, ``Acrobot-v1``): each physical
  parameter :math:`p` becomes :math:`p_0 e^{u}`, :math:`u \\sim U(-\\log s, \\log s)` for a
  scale :math:`s` (default 2: factors between 1/2 and 2), and, with ``permute_obs``, the
  observation vector is shown in a new random order. CartPole: gravity, cart mass, pole
  mass, half pole length, force magnitude (its derived total mass and pole mass x length
  are recomputed); Acrobot: both link lengths, masses, centre-of-mass positions and the
  moment of inertia.
* :class:`SlipperyAnt` (``Ant-v5``, pip ``mujoco``): the sliding friction of every geom
  becomes :math:`f = e^{u}`, :math:`u \\sim U(\\log 0.02, \\log 2)` (log-uniform in
  [0.02, 2], Dohare et al. 2024). Dohare et al. rewrite the default geom friction of
  ``ant.xml`` to ``"f 0.5 0.5"``, which every geom (the floor included) inherits; here the
  same first column of ``model.geom_friction`` is set on the live MuJoCo model. Their
  schedule changes friction every 2M steps; the study's task length says when.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np

PHYSICS = {
    "CartPole-v1": ("gravity", "masscart", "masspole", "length", "force_mag"),
    "Acrobot-v1": ("LINK_LENGTH_1", "LINK_LENGTH_2", "LINK_MASS_1", "LINK_MASS_2",
                   "LINK_COM_POS_1", "LINK_COM_POS_2", "LINK_MOI"),
}
ENVS = (*PHYSICS, "Ant-v5")


def _rng(seed: int, task: int) -> np.random.Generator:
    return np.random.default_rng([seed, task, 31])


class ChangingClassicControl(gym.ObservationWrapper):
    """Classic control with new physics and (optionally) a new observation order per task."""

    def __init__(self, env: gym.Env, seed: int = 0, scale: float = 2.0,
                 permute_obs: bool = True) -> None:
        super().__init__(env)
        self.name = env.spec.id
        if self.name not in PHYSICS:
            raise ValueError(f"{self.name}: changing dynamics are defined for {', '.join(PHYSICS)}")
        self.seed, self.scale, self.permute_obs = seed, scale, permute_obs
        base = env.unwrapped
        self.defaults = {k: float(getattr(base, k)) for k in PHYSICS[self.name]}
        self.base_space = env.observation_space
        self.perm = np.arange(self.base_space.shape[0])
        self.physics = dict(self.defaults)

    def set_task(self, task: int) -> None:
        rng = _rng(self.seed, task)
        log_scale = math.log(self.scale)
        self.physics = {k: v * math.exp(rng.uniform(-log_scale, log_scale))
                        for k, v in self.defaults.items()}
        base = self.env.unwrapped
        for key, value in self.physics.items():
            setattr(base, key, value)
        if self.name == "CartPole-v1":
            base.total_mass = base.masspole + base.masscart
            base.polemass_length = base.masspole * base.length
        n = self.base_space.shape[0]
        self.perm = rng.permutation(n) if self.permute_obs else np.arange(n)
        self.observation_space = gym.spaces.Box(self.base_space.low[self.perm],
                                                self.base_space.high[self.perm],
                                                dtype=self.base_space.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[self.perm]


class SlipperyAnt(gym.Wrapper):
    """Ant-v5 whose sliding friction is redrawn log-uniformly in [low, high] per task."""

    def __init__(self, env: gym.Env, seed: int = 0, low: float = 0.02,
                 high: float = 2.0) -> None:
        super().__init__(env)
        self.seed, self.low, self.high = seed, low, high
        self.friction = float(env.unwrapped.model.geom_friction[0, 0])

    def set_task(self, task: int) -> None:
        self.friction = float(math.exp(_rng(self.seed, task).uniform(math.log(self.low),
                                                                     math.log(self.high))))
        self.env.unwrapped.model.geom_friction[:, 0] = self.friction


def make_env(name: str, seed: int = 0, scale: float = 2.0, permute_obs: bool = True,
             friction_low: float = 0.02, friction_high: float = 2.0) -> gym.Env:
    """The named environment inside its changing-dynamics wrapper, at task 0."""
    if name not in ENVS:
        raise ValueError(f"unknown environment {name!r}; choose {', '.join(ENVS)}")
    if name == "Ant-v5":
        env = SlipperyAnt(gym.make(name), seed, friction_low, friction_high)
    else:
        env = ChangingClassicControl(gym.make(name), seed, scale, permute_obs)
    env.set_task(0)
    return env
