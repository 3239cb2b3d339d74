"""Minari datasets written with Minari's own API are read; ours are read by Minari."""

from __future__ import annotations

import numpy as np
import pytest

from raystudy.algorithms.imitation import (
    Episode,
    ReferenceReturns,
    minari_env_id,
    minari_reference,
    read_minari,
    write_minari,
)
from raystudy.errors import DataError


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path / "minari"


def test_reads_a_dataset_written_with_minaris_api(store):
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    rng = np.random.default_rng(1)
    lengths, buffers, raw = [4, 6], [], []
    for i, T in enumerate(lengths):
        obs = rng.uniform(-1, 1, (T + 1, 3)).astype(np.float32)
        act = rng.uniform(-2, 2, (T, 1)).astype(np.float32)
        rew = rng.normal(size=T)
        term = [False] * (T - 1) + [i == 0]
        trunc = [False] * (T - 1) + [i == 1]
        raw.append((obs, act, rew, term))
        buffers.append(EpisodeBuffer(id=i, observations=obs, actions=act, rewards=list(rew),
                                     terminations=term, truncations=trunc))
    minari.create_dataset_from_buffers("test/pendulum/mixed-v0", buffers, env="Pendulum-v1",
                                       ref_min_score=-1200.0, ref_max_score=-150.0,
                                       algorithm_name="test", author="t", author_email="t",
                                       code_permalink="t", description="t",
                                       eval_env="Pendulum-v1")
    episodes = read_minari("test/pendulum/mixed-v0")
    assert [len(e) for e in episodes] == lengths
    for (obs, act, rew, term), episode in zip(raw, episodes, strict=True):
        np.testing.assert_array_equal(episode.observations, obs[:-1])
        np.testing.assert_array_equal(episode.next_observations, obs[1:])
        np.testing.assert_array_equal(episode.actions, act)
        np.testing.assert_allclose(episode.rewards, rew, rtol=1e-6)
        assert episode.terminals.tolist() == term
    assert episodes[0].terminated and not episodes[0].timeout
    assert episodes[1].timeout and not episodes[1].terminated
    ref = minari_reference("test/pendulum/mixed-v0")
    assert (ref.random, ref.expert) == (-1200.0, -150.0)
    assert minari_env_id("test/pendulum/mixed-v0") == "Pendulum-v1"


def test_written_dataset_is_what_minari_loads(store):
    import minari

    rng = np.random.default_rng(2)
    episodes = []
    for T, timeout in ((5, True), (3, False)):
        obs = rng.normal(size=(T + 1, 3))
        episodes.append(Episode(obs[:-1], rng.uniform(-1, 1, (T, 1)), rng.normal(size=T),
                                obs[1:], [False] * (T - 1) + [not timeout], timeout=timeout))
    path = write_minari("raystudy/pendulum/test-v0", episodes, "Pendulum-v1",
                        ReferenceReturns(-1300.0, -130.0), description="test")
    assert path.startswith(str(store))
    loaded = minari.load_dataset("raystudy/pendulum/test-v0")
    assert loaded.total_episodes == 2 and loaded.total_steps == 8
    assert minari.get_normalized_score(loaded, np.array([-130.0]))[0] == pytest.approx(1.0)
    for original, data in zip(episodes, loaded.iterate_episodes(), strict=True):
        np.testing.assert_allclose(data.observations[:-1], original.observations, rtol=1e-6)
        np.testing.assert_allclose(data.observations[-1], original.next_observations[-1],
                                   rtol=1e-6)
        assert list(data.terminations) == list(original.terminals)
        assert bool(data.truncations[-1]) == original.timeout
    with pytest.raises(DataError, match="already exists"):
        write_minari("raystudy/pendulum/test-v0", episodes, "Pendulum-v1")


def test_missing_dataset_is_one_line_error(store):
    with pytest.raises(DataError, match="not in the local store.*nothing is downloaded") as info:
        read_minari("nobody/pendulum/none-v0")
    assert "\n" not in str(info.value)
