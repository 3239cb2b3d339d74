"""Changing-dynamics wrappers: what changes per task, within its range, reproducibly."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from raystudy.algorithms.plasticity.envs import PHYSICS, make_env


def test_cartpole_physics_and_observation_order_change_per_task():
    env = make_env("CartPole-v1", seed=3, scale=2.0)
    base = env.unwrapped
    seen = []
    for task in range(4):
        env.set_task(task)
        for key in PHYSICS["CartPole-v1"]:
            factor = getattr(base, key) / env.defaults[key]
            assert 0.5 <= factor <= 2.0
        assert base.total_mass == pytest.approx(base.masspole + base.masscart)
        assert base.polemass_length == pytest.approx(base.masspole * base.length)
        seen.append((dict(env.physics), tuple(env.perm)))
        obs, _ = env.reset(seed=11)
        raw = base.state  # the unpermuted state the observation came from
        assert np.allclose(obs, np.asarray(raw, dtype=np.float32)[env.perm])
    assert len({tuple(sorted(p.items())) for p, _ in seen}) == 4
    assert len({perm for _, perm in seen}) > 1
    again = make_env("CartPole-v1", seed=3)
    again.set_task(2)
    assert again.physics == seen[2][0] and tuple(again.perm) == seen[2][1]


def test_physics_change_the_dynamics():
    steps = []
    for task in (0, 1):
        env = make_env("CartPole-v1", seed=0, permute_obs=False)
        env.set_task(task)
        env.reset(seed=5)
        obs, *_ = env.step(1)
        steps.append(obs)
    assert not np.allclose(steps[0], steps[1])  # same start and action, new physics


def test_acrobot_parameters_and_unpermuted_option():
    env = make_env("Acrobot-v1", seed=1, scale=1.5, permute_obs=False)
    env.set_task(5)
    for key in PHYSICS["Acrobot-v1"]:
        assert 1 / 1.5 <= getattr(env.unwrapped, key) / env.defaults[key] <= 1.5
    assert list(env.perm) == list(range(6))


def test_slippery_ant_friction_is_log_uniform_in_its_range_and_reaches_the_model():
    env = make_env("Ant-v5", seed=0)
    logs = []
    for task in range(200):
        env.set_task(task)
        friction = env.unwrapped.model.geom_friction
        assert np.all(friction[:, 0] == env.friction) and 0.02 <= env.friction <= 2.0
        logs.append(math.log(env.friction))
    # log-uniform on [log 0.02, log 2]: mean at the centre, std = width / sqrt(12)
    centre, width = (math.log(0.02) + math.log(2)) / 2, math.log(2) - math.log(0.02)
    assert np.mean(logs) == pytest.approx(centre, abs=0.12 * width / math.sqrt(12) * 3)
    assert np.std(logs) == pytest.approx(width / math.sqrt(12), rel=0.12)
    assert isinstance(env.action_space, gym.spaces.Box)


def test_unknown_environment():
    with pytest.raises(ValueError, match="unknown environment 'Pendulum-v1'"):
        make_env("Pendulum-v1")
