"""Policies that generate offline data: analytic experts, their medium versions, random.

**Pendulum-v1** (``theta = 0`` upright, observation ``[cos theta, sin theta, w]``, torque
``u`` in [-2, 2]). The rod has ``I = m l^2 / 3 = 1/3`` and ``I w' = (m g l / 2) sin theta
+ u`` with ``m g l / 2 = 5``, so its energy ``E = I w^2 / 2 + 5 cos theta`` (5 at rest
upright) changes as ``dE/dt = u w``. Energy pumping pushes with the motion while
``E < 5`` and against it above: ``u = clip(k (5 - E) sign(w), -2, 2)``; within
``top`` radians of upright a PD law balances: ``u = clip(-(k_p theta + k_d w), -2, 2)``.

**InvertedPendulum-v5** (cart-pole, observation ``x = [cart, pole angle, their
velocities]``, force in [-3, 3]). LQR: the env's transition over one action (its
``frame_skip`` MuJoCo steps) is linearised around the upright rest state by central
finite differences, ``x' ~ A x + B u``, the discrete algebraic Riccati equation
``P = A'PA - A'PB (R + B'PB)^-1 B'PA + Q`` is solved with SciPy, and ``u = -K x`` with
``K = (R + B'PB)^-1 B'PA``.

**medium** policies follow the expert but take a uniformly random action with
probability ``MEDIUM_EPSILON[env]``, chosen so they score about a third of the way from
random to expert (the role of D4RL's "medium" checkpoints); for the MuJoCo tasks the
medium policy is a SAC checkpoint instead (see ``sac.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .episodes import Episode
from .rollouts import Policy, collect, make_env
from .scores import ReferenceReturns

ANALYTIC_ENVS = ("Pendulum-v1", "InvertedPendulum-v5")
MEDIUM_EPSILON = {"Pendulum-v1": 0.8, "InvertedPendulum-v5": 0.16}
POLICIES = ("expert", "medium", "random")


class PendulumSwingUp:
    """Energy-pumping swing-up with PD balance near the top (Pendulum-v1)."""

    def __init__(self, gain: float = 2.0, top: float = 0.6, kp: float = 12.0,
                 kd: float = 3.0) -> None:
        self.gain, self.cos_top, self.kp, self.kd = gain, float(np.cos(top)), kp, kd

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        cos, sin, w = (float(v) for v in obs)
        if cos > self.cos_top:  # within `top` of upright: PD balance
            u = -(self.kp * np.arctan2(sin, cos) + self.kd * w)
        else:  # pump energy towards E = 5 (upright at rest)
            energy = w * w / 6.0 + 5.0 * cos
            u = self.gain * (5.0 - energy) * (1.0 if w >= 0 else -1.0)
        return np.array([np.clip(u, -2.0, 2.0)], dtype=np.float32)


class LinearQuadratic:
    """Discrete-time LQR around a MuJoCo env's rest state (``InvertedPendulum-v5``)."""

    def __init__(self, env_id: str = "InvertedPendulum-v5", q: tuple[float, ...] = (1, 10, 1, 1),
                 r: float = 0.1, step: float = 1e-5) -> None:
        import mujoco
        import scipy.linalg

        env = make_env(env_id)
        base = env.unwrapped
        model, data = base.model, base.data
        nq, nv = model.nq, model.nv

        def transition(x: np.ndarray, u: np.ndarray) -> np.ndarray:
            data.qpos[:], data.qvel[:], data.ctrl[:] = x[:nq], x[nq:], u
            for _ in range(base.frame_skip):
                mujoco.mj_step(model, data)
            return np.concatenate([data.qpos, data.qvel])

        x0, u0 = np.zeros(nq + nv), np.zeros(model.nu)
        A = np.stack([(transition(x0 + step * e, u0) - transition(x0 - step * e, u0))
                      / (2 * step) for e in np.eye(nq + nv)], axis=1)
        B = np.stack([(transition(x0, u0 + step * e) - transition(x0, u0 - step * e))
                      / (2 * step) for e in np.eye(model.nu)], axis=1)
        env.close()
        Q, R = np.diag(np.asarray(q, float)), np.eye(model.nu) * r
        P = scipy.linalg.solve_discrete_are(A, B, Q, R)
        self.K = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return (-self.K @ np.asarray(obs, float)).astype(np.float32)


class RandomPolicy:
    """Uniform actions over the action box, from its own seeded generator."""

    def __init__(self, low: np.ndarray, high: np.ndarray, seed: int = 0) -> None:
        self.low, self.high = np.asarray(low), np.asarray(high)
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.uniform(self.low, self.high).astype(np.float32)


class EpsilonRandom:
    """``policy``'s action, or with probability ``epsilon`` a uniform random one."""

    def __init__(self, policy: Policy, low: np.ndarray, high: np.ndarray, epsilon: float,
                 seed: int = 0) -> None:
        self.policy, self.epsilon = policy, epsilon
        self.random = RandomPolicy(low, high, seed)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        if self.random.rng.random() < self.epsilon:
            return self.random(obs)
        return self.policy(obs)


def analytic_expert(env_id: str) -> Policy:
    """The analytic expert of ``Pendulum-v1`` or ``InvertedPendulum-v5``."""
    if env_id == "Pendulum-v1":
        return PendulumSwingUp()
    if env_id == "InvertedPendulum-v5":
        return LinearQuadratic(env_id)
    raise ValueError(f"no analytic expert for {env_id}; analytic experts: "
                     f"{', '.join(ANALYTIC_ENVS)} (MuJoCo tasks use a SAC checkpoint)")


def make_policy(env_id: str, kind: str, seed: int = 0,
                expert_dir: str | Path | None = None) -> Policy:
    """``expert``, ``medium`` or ``random`` for ``env_id``.

    Analytic envs need nothing else; other envs need ``expert_dir`` holding the SAC
    trainer's ``expert.pt`` and ``medium.pt``.
    """
    if kind not in POLICIES:
        raise ValueError(f"policy {kind!r} is not one of {', '.join(POLICIES)}")
    space = make_env(env_id).action_space
    if getattr(space, "low", None) is None:
        raise ValueError(f"{env_id} has {space} actions; offline imitation here needs a "
                         "continuous (Box) action space")
    if kind == "random":
        return RandomPolicy(space.low, space.high, seed)
    if env_id in ANALYTIC_ENVS:
        expert = analytic_expert(env_id)
        if kind == "expert":
            return expert
        return EpsilonRandom(expert, space.low, space.high, MEDIUM_EPSILON[env_id], seed)
    if expert_dir is None:
        raise ValueError(f"{env_id} has no analytic expert: pass the folder holding the SAC "
                         "trainer's expert.pt and medium.pt (--expert-dir, data.expert_dir)")
    from .sac import load_actor_policy

    return load_actor_policy(Path(expert_dir).expanduser() / f"{kind}.pt")


def measure_references(env_id: str, expert: Policy, episodes: int = 100,
                       seed: int = 100_000) -> ReferenceReturns:
    """Mean returns of the random policy and of ``expert`` over ``episodes`` episodes each."""
    space = make_env(env_id).action_space
    random_episodes = collect(env_id, RandomPolicy(space.low, space.high, seed), episodes, seed)
    low = float(np.mean([e.episode_return for e in random_episodes]))
    high = float(np.mean([e.episode_return for e in collect(env_id, expert, episodes, seed)]))
    return ReferenceReturns(low, high, source=f"measured by the generator ({episodes} "
                                              f"episodes each, seeds {seed}-{seed + episodes - 1})")


def generate(env_id: str, kind: str, episodes: int, seed: int = 0,
             expert_dir: str | Path | None = None,
             reference_episodes: int = 100) -> tuple[list[Episode], ReferenceReturns]:
    """``episodes`` episodes of the ``kind`` policy and the measured reference returns.

    Data episodes use reset seeds ``seed ...``; the references use seeds from 100,000 on.
    """
    data = collect(env_id, make_policy(env_id, kind, seed, expert_dir), episodes, seed)
    reference = measure_references(env_id, make_policy(env_id, "expert", seed, expert_dir),
                                   reference_episodes)
    return data, reference


def dataset_names(env_id: str, kind: str) -> tuple[str, str]:
    """File name and Minari id of generated data: ``pendulum-v1-expert.hdf5``,
    ``raystudy/pendulum/expert-v0``."""
    name = env_id.split("/")[-1]
    base = name.rsplit("-v", 1)[0].lower()
    return f"{name.lower()}-{kind}.hdf5", f"raystudy/{base}/{kind}-v0"
