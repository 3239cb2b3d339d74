"""Analytic experts: hand-checked actions, LQR against a Riccati recursion, their returns."""

from __future__ import annotations

import numpy as np
import pytest

from raystudy.algorithms.imitation import read_d4rl_hdf5, read_minari
from raystudy.algorithms.imitation.experts import (
    LinearQuadratic,
    PendulumSwingUp,
    make_policy,
    measure_references,
)
from raystudy.algorithms.imitation.rollouts import collect
from raystudy.cli import main


def test_pendulum_swing_up_actions_by_hand():
    expert = PendulumSwingUp()
    assert expert(np.array([1.0, 0.0, 0.0]))[0] == 0.0  # upright at rest
    # theta = 0.1 (inside the PD region), w = 0: u = -12 * 0.1 = -1.2
    assert expert(np.array([np.cos(0.1), np.sin(0.1), 0.0]))[0] == pytest.approx(-1.2)
    # Hanging, w = 0.5: E = 0.25 / 6 - 5, u = 2 (5 - E) = 20.08 -> clipped to 2, with w.
    assert expert(np.array([-1.0, 0.0, 0.5]))[0] == 2.0
    assert expert(np.array([-1.0, 0.0, -0.5]))[0] == -2.0


def test_lqr_gain_matches_a_riccati_recursion():
    """Reference: A, B by one-sided differences, K from iterating P <- Q + A'P(A - BK)."""
    import mujoco

    from raystudy.algorithms.imitation.rollouts import make_env

    base = make_env("InvertedPendulum-v5").unwrapped
    model, data = base.model, base.data

    def step(x, u):
        data.qpos[:], data.qvel[:], data.ctrl[:] = x[:2], x[2:], u
        for _ in range(base.frame_skip):
            mujoco.mj_step(model, data)
        return np.concatenate([data.qpos, data.qvel])

    lqr = LinearQuadratic()
    h, zero = 1e-6, step(np.zeros(4), np.zeros(1))
    A = np.stack([(step(h * e, np.zeros(1)) - zero) / h for e in np.eye(4)], axis=1)
    B = ((step(np.zeros(4), np.array([h])) - zero) / h)[:, None]
    Q, R, P = np.diag([1.0, 10.0, 1.0, 1.0]), np.array([[0.1]]), np.diag([1.0, 10.0, 1.0, 1.0])
    for _ in range(5000):
        K = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
        P = Q + A.T @ P @ (A - B @ K)
    np.testing.assert_allclose(lqr.K, K, rtol=2e-3)
    assert np.abs(np.linalg.eigvals(A - B @ lqr.K)).max() < 1.0


def test_expert_returns_match_the_issue():
    """Pendulum: about -130 for the expert vs about -1,370 random (issue 10); LQR balances."""
    pendulum = measure_references("Pendulum-v1", make_policy("Pendulum-v1", "expert"), 30)
    assert -200 < pendulum.expert < -110 and -1450 < pendulum.random < -1100
    medium = collect("Pendulum-v1", make_policy("Pendulum-v1", "medium", seed=1), 30, seed=0)
    score = pendulum.score(np.mean([e.episode_return for e in medium]))
    assert 20 < score < 50  # "about a third of its return"
    lqr = collect("InvertedPendulum-v5", make_policy("InvertedPendulum-v5", "expert"), 3)
    assert [e.episode_return for e in lqr] == [1000.0] * 3 and all(e.timeout for e in lqr)
    random = collect("InvertedPendulum-v5", make_policy("InvertedPendulum-v5", "random"), 5)
    assert all(e.terminated and e.episode_return < 50 for e in random)


def test_make_offline_rl_writes_both_formats(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "store"))
    assert main(["data", "make-offline-rl", str(tmp_path / "out"), "--env",
                 "InvertedPendulum-v5", "--policy", "random", "--episodes", "4",
                 "--reference-episodes", "3"]) == 0
    out = capsys.readouterr().out
    assert "raystudy/invertedpendulum/random-v0" in out and "reference random" in out
    from_file = read_d4rl_hdf5(tmp_path / "out" / "invertedpendulum-v5-random.hdf5")
    from_minari = read_minari("raystudy/invertedpendulum/random-v0")
    assert [len(e) for e in from_file] == [len(e) for e in from_minari]
    for a, b in zip(from_file, from_minari, strict=True):
        np.testing.assert_allclose(a.observations, b.observations, rtol=1e-6)
        assert a.terminated and b.terminated
    assert main(["data", "make-offline-rl", str(tmp_path / "out"), "--env", "Hopper-v5",
                 "--policy", "expert", "--episodes", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--expert-dir" in err[0]


def test_make_offline_rl_unwritable_places_are_one_line_and_leave_nothing(
        tmp_path, monkeypatch, capsys, mount_tmpfs):
    args = ["--env", "Pendulum-v1", "--policy", "random", "--episodes", "3",
            "--reference-episodes", "2"]
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "store"))
    read_only = mount_tmpfs(read_only=True)
    assert main(["data", "make-offline-rl", str(read_only / "out"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "output folder" in err[0] and "read-only" in err[0]
    # A Minari store with no room: the HDF5 file already written is removed again.
    full = mount_tmpfs(size="64k")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(full))
    monkeypatch.setenv("RAYSTUDY_MIN_FREE_MB", "0")
    out = tmp_path / "out"
    assert main(["data", "make-offline-rl", str(out), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "space" in err[0], err
    assert not list(out.glob("*")) and not list(full.rglob("*.hdf5"))


def test_make_offline_rl_refuses_discrete_actions_and_an_existing_file(tmp_path, monkeypatch,
                                                                       capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "store"))
    assert main(["data", "make-offline-rl", str(tmp_path / "out"), "--env", "CartPole-v1",
                 "--policy", "random", "--episodes", "1"]) == 2
    assert "continuous (Box) action space" in capsys.readouterr().err
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "pendulum-v1-random.hdf5").write_bytes(b"someone's file")
    assert main(["data", "make-offline-rl", str(tmp_path / "out"), "--env", "Pendulum-v1",
                 "--policy", "random", "--episodes", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already exists" in err[0]
    assert (tmp_path / "out" / "pendulum-v1-random.hdf5").read_bytes() == b"someone's file"
