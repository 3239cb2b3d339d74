"""D4RL HDF5 files written by h5py directly are read back with the right episode boundaries."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from raystudy.algorithms.imitation import (
    Episode,
    ReferenceReturns,
    d4rl_file_reference,
    d4rl_reference,
    normalized_score,
    read_d4rl_hdf5,
    write_d4rl_hdf5,
)
from raystudy.errors import DataError

# 12 rows: episode A ends by a terminal at row 3, B by a timeout at row 8, C is cut (9-11).
N, OBS, ACT = 12, 3, 2


def raw_arrays() -> dict[str, np.ndarray]:
    obs = np.arange(N * OBS, dtype=np.float64).reshape(N, OBS)
    terminals = np.zeros(N, bool)
    terminals[3] = True
    timeouts = np.zeros(N, bool)
    timeouts[8] = True
    return {"observations": obs, "actions": np.linspace(-1, 1, N * ACT).reshape(N, ACT),
            "rewards": np.arange(N, dtype=np.float32), "terminals": terminals,
            "timeouts": timeouts}


def write_raw(path, arrays, infos: bool = True) -> None:
    with h5py.File(path, "w") as handle:
        for key, value in arrays.items():
            handle[key] = value
        if infos:
            handle["infos/qpos"] = np.zeros((N, 2))


def test_old_layout_boundaries_and_dropped_transitions(tmp_path):
    path = tmp_path / "hopper_random-v2.hdf5"
    arrays = raw_arrays()
    write_raw(path, arrays)
    episodes = read_d4rl_hdf5(path)
    obs = arrays["observations"]
    assert [len(e) for e in episodes] == [4, 4, 2]  # B drops its timeout step, C its last
    a, b, c = episodes
    assert a.terminated and not a.timeout and b.timeout and not (c.timeout or c.terminated)
    np.testing.assert_array_equal(a.observations, obs[0:4])
    np.testing.assert_array_equal(a.next_observations[:3], obs[1:4])
    np.testing.assert_array_equal(a.next_observations[3], obs[3])  # unknown: own observation
    np.testing.assert_array_equal(b.observations, obs[4:8])
    np.testing.assert_array_equal(b.next_observations, obs[5:9])
    np.testing.assert_array_equal(c.next_observations, obs[10:12])
    np.testing.assert_array_equal(b.rewards, [4, 5, 6, 7])
    assert a.terminals.tolist() == [False, False, False, True]
    assert episodes[0].actions.dtype == np.float32 and episodes[0].actions.shape == (4, ACT)


def test_next_observations_keep_every_transition(tmp_path):
    path = tmp_path / "new.hdf5"
    arrays = raw_arrays()
    arrays["next_observations"] = arrays["observations"] + 100.0
    arrays["rewards"] = arrays["rewards"][:, None]  # some files store N x 1
    write_raw(path, arrays, infos=False)
    episodes = read_d4rl_hdf5(path)
    assert [len(e) for e in episodes] == [4, 5, 3]
    np.testing.assert_array_equal(episodes[1].next_observations,
                                  arrays["observations"][4:9] + 100.0)
    assert [e.episode_return for e in episodes] == [6.0, 30.0, 30.0]


@pytest.mark.parametrize("change, message", [
    (lambda a: a.pop("timeouts"), "missing key.*timeouts"),
    (lambda a: a.update(actions=a["actions"][:-1]), "ragged arrays.*actions=11"),
    (lambda a: a["observations"].__setitem__((5, 1), np.nan), "'observations' has NaN.*row 5"),
    (lambda a: a.update(observations=a["observations"].ravel()), "'observations' has shape"),
])
def test_malformed_files_are_one_line_data_errors(tmp_path, change, message):
    path = tmp_path / "bad.hdf5"
    arrays = raw_arrays()
    change(arrays)
    write_raw(path, arrays)
    with pytest.raises(DataError, match=message) as info:
        read_d4rl_hdf5(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_and_non_hdf5_files(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read_d4rl_hdf5(tmp_path / "nope.hdf5")
    (tmp_path / "text.hdf5").write_text("not hdf5")
    with pytest.raises(DataError, match="not an HDF5 file"):
        read_d4rl_hdf5(tmp_path / "text.hdf5")


def test_writer_round_trip_and_reference_attributes(tmp_path):
    rng = np.random.default_rng(0)

    def episode(n, terminal):
        obs = rng.normal(size=(n + 1, 2))
        return Episode(obs[:-1], rng.uniform(-1, 1, (n, 1)), rng.normal(size=n), obs[1:],
                       np.arange(n) == n - 1 if terminal else np.zeros(n, bool),
                       timeout=not terminal)

    episodes = [episode(5, True), episode(7, False), episode(3, False)]
    ref = ReferenceReturns(-10.0, 5.0)
    for with_next in (True, False):
        path = write_d4rl_hdf5(tmp_path / f"x{with_next}.hdf5", episodes, ref, env_id="E",
                               next_observations=with_next)
        back = read_d4rl_hdf5(path)
        # Without next_observations each timed-out episode loses its last transition.
        assert [len(e) for e in back] == ([5, 7, 3] if with_next else [5, 6, 2])
        for original, read in zip(episodes, back, strict=True):
            k = len(read)
            np.testing.assert_allclose(read.observations, original.observations[:k], rtol=1e-6)
            np.testing.assert_allclose(read.rewards, original.rewards[:k], rtol=1e-6)
            assert read.timeout == original.timeout
            if with_next:
                np.testing.assert_allclose(read.next_observations, original.next_observations,
                                           rtol=1e-6)
        assert d4rl_file_reference(path) == ReferenceReturns(-10.0, 5.0, f"{path.name} attributes")


def test_d4rl_reference_table_and_score():
    ref = d4rl_reference("hopper_random-v2")
    assert (ref.random, ref.expert) == (-20.272305, 3234.3)
    assert d4rl_reference("walker2d-medium-v2").expert == 4592.3
    assert d4rl_reference("pendulum-expert") is None
    assert ref.score(3234.3) == pytest.approx(100.0) and ref.score(-20.272305) == 0.0
    # 100 * (1000 - (-20.272305)) / (3234.3 + 20.272305) = 31.3489...
    assert normalized_score(1000.0, -20.272305, 3234.3) == pytest.approx(31.34893, abs=1e-4)
    with pytest.raises(ValueError, match="equal"):
        ReferenceReturns(1.0, 1.0)
