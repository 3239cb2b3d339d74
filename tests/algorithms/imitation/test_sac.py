"""The SAC trainer runs as a script for a few hundred steps; its experts generate Hopper data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from raystudy.algorithms.imitation import read_d4rl_hdf5
from raystudy.algorithms.imitation.sac import Actor, load_actor_policy, parse_args
from raystudy.cli import main

ROOT = Path(__file__).resolve().parents[3]


def test_squashed_log_prob_matches_a_transformed_distribution():
    torch.manual_seed(0)
    actor = Actor(3, 2, np.array([-2.0, -1.0]), np.array([2.0, 1.0]))
    obs = torch.randn(5, 3)
    action, log_prob, mode = actor.get_action(obs)
    mean, log_std = actor(obs)
    reference = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean, log_std.exp()),
        [torch.distributions.TanhTransform(),
         torch.distributions.AffineTransform(actor.action_bias, actor.action_scale)])
    torch.testing.assert_close(log_prob.squeeze(1), reference.log_prob(action).sum(1),
                               atol=2e-3, rtol=1e-3)
    assert (mode.abs() <= torch.tensor([2.0, 1.0])).all()


def test_args_parse_from_the_command_line():
    args = parse_args(["--env-id", "Walker2d-v5", "--total-timesteps", "10", "--autotune",
                       "false", "--alpha", "0.1"])
    assert (args.env_id, args.total_timesteps, args.autotune, args.alpha) == \
        ("Walker2d-v5", 10, False, 0.1)


def test_a_few_hundred_steps_write_experts_that_generate_hopper_data(tmp_path, monkeypatch,
                                                                      capsys):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "raystudy.algorithms.imitation.sac", "--env-id", "Hopper-v5",
         "--total-timesteps", "300", "--learning-starts", "100", "--eval-every", "150",
         "--eval-episodes", "1", "--out-dir", str(tmp_path / "experts")],
        env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'train/step': 300" in done.stdout
    policy = load_actor_policy(tmp_path / "experts" / "expert.pt")
    action = policy(np.zeros(11))
    assert action.shape == (3,) and np.abs(action).max() <= 1.0
    saved = torch.load(tmp_path / "experts" / "medium.pt", weights_only=False)
    assert saved["env_id"] == "Hopper-v5" and saved["step"] in (150, 300)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "store"))
    assert main(["data", "make-offline-rl", str(tmp_path / "out"), "--env", "Hopper-v5",
                 "--policy", "medium", "--episodes", "2", "--reference-episodes", "2",
                 "--expert-dir", str(tmp_path / "experts")]) == 0
    assert "raystudy/hopper/medium-v0" in capsys.readouterr().out
    episodes = read_d4rl_hdf5(tmp_path / "out" / "hopper-v5-medium.hdf5")
    assert len(episodes) == 2 and episodes[0].observations.shape[1] == 11
    with pytest.raises(ValueError, match="no such SAC checkpoint"):
        load_actor_policy(tmp_path / "nope.pt")
