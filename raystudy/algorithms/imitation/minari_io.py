"""Minari datasets in the local store, read and written without jax or downloads.

Minari (the maintained successor of D4RL) keeps datasets under ``MINARI_DATASETS_PATH``
(default ``~/.minari/datasets``). An episode there carries ``T + 1`` observations and
``T`` actions, rewards, terminations and truncations; ``s_{t+1}`` is observation
``t + 1``, and a truncated last step is a timeout.

Writing goes through ``minari.create_dataset_from_buffers`` with whole episodes built as
``minari.data_collector.episode_buffer.EpisodeBuffer`` objects: Minari's
``DataCollector`` would need jax (the ``minari[create]`` extra), this path does not.
The random and expert reference returns go into the dataset's metadata
(``ref_min_score`` / ``ref_max_score``), where ``minari.get_normalized_score`` reads them.
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Sequence

import numpy as np

from ...errors import DataError, MissingDataError
from .episodes import Episode
from .scores import ReferenceReturns


def minari_store() -> str:
    """The local Minari store this process reads and writes."""
    from minari.storage.datasets_root_dir import get_dataset_path

    return str(get_dataset_path())


def _load(dataset_id: str):
    import minari

    try:
        return minari.load_dataset(dataset_id, download=False)
    except FileNotFoundError:
        raise MissingDataError(f"Minari dataset {dataset_id}: not in the local store "
                               f"{minari_store()} (set MINARI_DATASETS_PATH, or write it with "
                               "`raystudy data make-offline-rl`); nothing is downloaded") from None
    except (ValueError, KeyError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"Minari dataset {dataset_id}: cannot be read ({first})") from None


def read_minari(dataset_id: str) -> list[Episode]:
    """A Minari dataset from the local store as a list of episodes (flat Box spaces only)."""
    dataset = _load(dataset_id)
    episodes = []
    for data in dataset.iterate_episodes():
        obs, actions = data.observations, data.actions
        if not isinstance(obs, np.ndarray) or not isinstance(actions, np.ndarray):
            raise DataError(f"Minari dataset {dataset_id}: episode {data.id} has "
                            f"{type(obs).__name__} observations/actions; expected flat arrays "
                            "(Box spaces)")
        steps = len(data.rewards)
        obs = obs.reshape(len(obs), -1)
        if len(obs) != steps + 1 or len(actions) != steps:
            raise DataError(f"Minari dataset {dataset_id}: episode {data.id} has {len(obs)} "
                            f"observations and {len(actions)} actions for {steps} steps; "
                            "expected T + 1 and T")
        if not np.isfinite(obs).all():
            raise DataError(f"Minari dataset {dataset_id}: episode {data.id} has NaN/inf "
                            "observations")
        terminals = np.asarray(data.terminations, bool)
        episodes.append(Episode(obs[:-1], actions, data.rewards, obs[1:], terminals,
                                timeout=bool(steps and data.truncations[-1]
                                             and not terminals[-1])))
    return episodes


def minari_reference(dataset_id: str) -> ReferenceReturns | None:
    """The dataset's ``ref_min_score`` / ``ref_max_score`` metadata, if it has both."""
    metadata = _load(dataset_id).storage.metadata
    low, high = metadata.get("ref_min_score"), metadata.get("ref_max_score")
    if low is None or high is None:
        return None
    return ReferenceReturns(float(low), float(high), source=f"Minari metadata ({dataset_id})")


def minari_dims(dataset_id: str) -> tuple[int, int]:
    """Flat observation and action sizes from the dataset's spaces (no episodes read)."""
    dataset = _load(dataset_id)
    obs, act = dataset.observation_space.shape, dataset.action_space.shape
    if obs is None or act is None or len(obs) != 1 or len(act) != 1:
        raise DataError(f"Minari dataset {dataset_id}: spaces {dataset.observation_space} / "
                        f"{dataset.action_space}; expected flat Box spaces")
    return obs[0], act[0]


def minari_env_id(dataset_id: str) -> str | None:
    """The gymnasium id of the environment the dataset was collected in, if recorded."""
    spec = _load(dataset_id).spec.env_spec
    return spec.id if spec is not None else None


def check_new_minari_id(dataset_id: str) -> None:
    """A DataError if ``dataset_id`` already exists in the local store."""
    import minari

    if dataset_id in minari.list_local_datasets():
        raise DataError(f"Minari dataset {dataset_id} already exists in {minari_store()}; "
                        f"remove it first (`minari delete {dataset_id}`) or pick another id")


def write_minari(dataset_id: str, episodes: Sequence[Episode], env_id: str,
                 reference: ReferenceReturns | None = None, description: str = "",
                 algorithm: str = "") -> str:
    """Write episodes as a Minari dataset in the local store; returns the store's path."""
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    check_new_minari_id(dataset_id)
    buffers = []
    for index, episode in enumerate(episodes):
        truncations = np.zeros(len(episode), bool)
        truncations[-1] = episode.timeout
        buffers.append(EpisodeBuffer(
            id=index,
            observations=np.concatenate([episode.observations, episode.next_observations[-1:]]),
            actions=episode.actions, rewards=list(episode.rewards.astype(np.float64)),
            terminations=list(episode.terminals), truncations=list(truncations)))
    scores = {}
    if reference is not None:
        scores = {"ref_min_score": reference.random, "ref_max_score": reference.expert}
    where = os.path.join(minari_store(), dataset_id)
    try:
        with warnings.catch_warnings():  # author, e-mail, permalink: not ours to invent
            warnings.simplefilter("ignore", UserWarning)
            minari.create_dataset_from_buffers(
                dataset_id, buffers, env=env_id, eval_env=env_id,
                algorithm_name=algorithm or None, author="raystudy", author_email="n/a",
                code_permalink="raystudy/algorithms/imitation",
                description=description or None, **scores)
    except BaseException:
        shutil.rmtree(where, ignore_errors=True)  # no half-written dataset in the store
        raise
    return where
