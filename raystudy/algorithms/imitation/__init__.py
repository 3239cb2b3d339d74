"""Offline imitation from contrasting demonstrations: data, experts, DualCOIL and baselines.

Data: :class:`Episode` (one type for every source), :func:`read_d4rl_hdf5` /
:func:`write_d4rl_hdf5` (D4RL's HDF5 layout through h5py), :func:`read_minari` /
:func:`write_minari` (Minari's local store, no jax), :func:`compose` (good / bad /
unlabeled sets: expert episodes, undesirable 1000-transition slices or episodes),
:class:`ReferenceReturns` and the normalised score.
See the package README for the file map.
"""

from .compose import MixSpec, OfflineMix, compose
from .d4rl import d4rl_file_reference, read_d4rl_hdf5, write_d4rl_hdf5
from .episodes import Episode, Transitions, returns
from .minari_io import minari_env_id, minari_reference, minari_store, read_minari, write_minari
from .scores import D4RL_REFERENCE, ReferenceReturns, d4rl_reference, normalized_score

__all__ = [
    "D4RL_REFERENCE", "Episode", "MixSpec", "OfflineMix", "ReferenceReturns", "Transitions",
    "compose", "d4rl_file_reference", "d4rl_reference", "minari_env_id", "minari_reference",
    "minari_store", "normalized_score", "read_d4rl_hdf5", "read_minari", "returns",
    "write_d4rl_hdf5", "write_minari",
]
