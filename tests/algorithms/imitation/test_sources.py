"""Task sources: locations, cached generation, assembly with normalisation, sampling."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from raystudy.algorithms.imitation import MixSpec, sources
from raystudy.algorithms.imitation.d4rl import inspect_d4rl_hdf5


def test_locations_follow_d4rl_and_minari_names():
    assert sources.locate("d4rl", "hopper", "random", "/data", {}) == \
        "/data/hopper_random-v2.hdf5"
    assert sources.locate("minari", "walker2d", "random", "", {}) == "mujoco/walker2d/simple-v0"
    assert sources.locate("minari", "ant", "expert", "", {"expert": "me/ant/x-v0"}) == \
        "me/ant/x-v0"
    with pytest.raises(ValueError, match="data.task='cartpole'"):
        sources.env_id("cartpole")


def test_generated_files_are_written_once_and_assembled_normalised(tmp_path):
    where = {k: str(sources.generated_file(str(tmp_path), "pendulum", k, n,
                                           reference_episodes=5))
             for k, n in (("expert", 4), ("random", 6))}
    stamp = (tmp_path / "pendulum-v1-random-6.hdf5").stat().st_mtime_ns
    sources.generated_file(str(tmp_path), "pendulum", "random", 6)  # cached: not rewritten
    assert (tmp_path / "pendulum-v1-random-6.hdf5").stat().st_mtime_ns == stamp
    assert inspect_d4rl_hdf5(where["random"]) == (1200, 3, 1)
    with h5py.File(where["expert"]) as handle:
        assert handle.attrs["ref_max_score"] > handle.attrs["ref_min_score"]
    # bad: 2 slices of 300 transitions, cutting the second 200-step episode in two
    data = sources.assemble("generate", "pendulum", where, MixSpec.parse("random/1/2/3"),
                            slice_length=300)
    unlabeled = data.sets["unlabeled"]
    assert len(unlabeled) == 9 * 200 and data.hidden_expert.sum() == 600
    assert len(data.sets["bad"]) == 600 and data.record["bad"]["episodes"] == 4  # pieces
    assert data.record["unlabeled"]["undesirable_transition_fraction"] == pytest.approx(2 / 3)
    assert len(data.sets["all"].initial_observations) == 6 + 3  # episode starts only
    np.testing.assert_allclose(unlabeled.observations.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(unlabeled.observations.std(0), 1, atol=2e-3)
    assert np.abs(data.sets["all"].actions).max() <= 1.0 and len(data.sets["all"]) == 1800
    raw = np.concatenate([e.actions for e in sources.load("generate", where["expert"])[:1]])
    np.testing.assert_allclose(data.sets["good"].actions, raw / 2.0, atol=1e-6)  # [-2, 2] box
    batch = sources.Sampler(data, 0).batch(("good", "unlabeled"), 7)
    assert batch["good"]["observations"].shape == (7, 3) and batch["initial"].shape == (7, 3)
    assert set(batch["unlabeled"]) >= {"is_expert", "terminals"}
    sources.save_offline_data(data, tmp_path / "mix")
    back = sources.load_offline_data(tmp_path / "mix",
                                     lambda name: np.load(tmp_path / "mix" / f"{name}.npy"))
    np.testing.assert_array_equal(back.sets["bad"].actions, data.sets["bad"].actions)
    np.testing.assert_array_equal(back.scale, data.scale)
    assert back.reference == data.reference and back.env_id == "Pendulum-v1"
    good_only = sources.load_offline_data(tmp_path / "mix",  # BC on good data's sets
                                          lambda name: np.load(tmp_path / "mix" / f"{name}.npy"),
                                          ("good",))
    assert set(good_only.sets) == {"good"} and len(good_only.hidden_expert) == 0
    np.testing.assert_array_equal(good_only.sets["good"].actions, data.sets["good"].actions)


def test_d4rl_ant_data_are_evaluated_where_their_111_dimensions_come_from(tmp_path):
    """D4RL's ant-v2 files have 111 observation dimensions: Ant-v5 (105) refuses them,
    Ant-v4 with contact forces (111) takes them, keyword arguments and all."""
    from raystudy.algorithms.imitation.rollouts import make_env

    assert sources.env_id("ant") == "Ant-v5"
    d4rl_env = sources.env_id("ant", "d4rl")
    assert make_env(d4rl_env).observation_space.shape == (111,)
    assert make_env("Ant-v5").observation_space.shape == (105,)
    assert sources.env_id("hopper", "d4rl") == "Hopper-v5"
    path = tmp_path / "ant_expert-v2.hdf5"
    with h5py.File(path, "w") as f:
        f["observations"] = np.zeros((4, 111), np.float32)
        f["actions"] = np.zeros((4, 8), np.float32)
        f["rewards"] = np.zeros(4, np.float32)
        f["terminals"] = np.zeros(4, bool)
        f["timeouts"] = np.array([0, 0, 0, 1], bool)
    sources.check_sources("d4rl", "ant", {"expert": str(path)})   # was refused: 105 x 8
