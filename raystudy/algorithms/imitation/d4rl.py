"""D4RL's HDF5 layout, read and written with h5py alone (no gym, d4rl or mujoco-py).

A D4RL file holds flat arrays over N steps of many episodes, in order:

=====================  ===========  =============================================
key                    shape        meaning
=====================  ===========  =============================================
``observations``       N x obs_dim  s_t
``actions``            N x act_dim  a_t
``rewards``            N (or N x 1) r_t
``terminals``          N            the MDP ended after step t
``timeouts``           N            a time limit cut the episode after step t
``next_observations``  N x obs_dim  s_{t+1} (optional; newer files only)
``infos/*``            N x ...      simulator state etc. (optional, not read)
=====================  ===========  =============================================

Episodes end where ``terminals`` or ``timeouts`` is set. Without ``next_observations``
the next observation is the following row, except where there is none: a timed-out
last transition is dropped (as ``d4rl.qlearning_dataset`` drops it), so is the last
row of a file cut mid-episode, and a terminal step's next observation, which the file
does not hold and no Bellman target uses, is set to its own observation.

Files written by :func:`write_d4rl_hdf5` also carry the attributes ``env_id``,
``policy``, ``ref_min_score`` and ``ref_max_score`` (the generator's measured random
and expert returns).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import h5py
import numpy as np

from ...errors import DataError
from .episodes import Episode
from .scores import ReferenceReturns, d4rl_reference

REQUIRED = ("observations", "actions", "rewards", "terminals", "timeouts")


def _load_arrays(path: Path, rows: int | None = None) -> tuple[dict[str, np.ndarray],
                                                                 dict[str, int]]:
    """The file's arrays (the first ``rows`` of each, or all) and each key's full length."""
    if not path.is_file():
        raise DataError(f"{path}: no such file (expected a D4RL-format HDF5 file)")
    try:
        handle = h5py.File(path, "r")
    except OSError as exc:
        raise DataError(f"{path}: not an HDF5 file ({str(exc).splitlines()[0]})") from None
    with handle:
        missing = [k for k in REQUIRED if k not in handle]
        if missing:
            raise DataError(f"{path}: missing key(s) {', '.join(missing)}; a D4RL file has "
                            f"{', '.join(REQUIRED)} (+ optional next_observations, infos)")
        keys = [*REQUIRED, *(["next_observations"] if "next_observations" in handle else [])]
        for key in keys:
            if not isinstance(handle[key], h5py.Dataset) or not handle[key].shape:
                raise DataError(f"{path}: '{key}' is not an array")
        lengths = {key: handle[key].shape[0] for key in keys}
        return {key: handle[key][:rows] for key in keys}, lengths


def _check(path: Path, data: dict[str, np.ndarray], lengths: dict[str, int]) -> None:
    for key in ("observations", "actions", "next_observations"):
        if key in data and (data[key].ndim != 2 or not np.issubdtype(data[key].dtype,
                                                                     np.number)):
            raise DataError(f"{path}: '{key}' has shape {data[key].shape} and dtype "
                            f"{data[key].dtype}; expected N x dim numbers")
    n = lengths["observations"]
    if len(set(lengths.values())) != 1:
        listed = ", ".join(f"{k}={v}" for k, v in lengths.items())
        raise DataError(f"{path}: ragged arrays ({listed}); every key needs {n} rows")
    rows = len(data["observations"])
    if data["rewards"].reshape(rows, -1).shape[1] != 1:
        raise DataError(f"{path}: 'rewards' has shape {data['rewards'].shape}; expected N")
    if "next_observations" in data and data["next_observations"].shape != \
            data["observations"].shape:
        raise DataError(f"{path}: next_observations {data['next_observations'].shape} vs "
                        f"observations {data['observations'].shape}")
    for key in ("observations", "next_observations", "actions", "rewards"):
        if key in data:
            bad = ~np.isfinite(data[key].reshape(rows, -1)).all(axis=1)
            if bad.any():
                raise DataError(f"{path}: '{key}' has NaN/inf values (first at row "
                                f"{int(np.argmax(bad))}); expected finite numbers")


def inspect_d4rl_hdf5(path: str | Path, rows: int = 10_000) -> tuple[int, int, int]:
    """Cheap check of a D4RL file (keys, shapes, dtypes; NaN in the first ``rows``).

    Returns ``(steps, obs_dim, act_dim)``; a problem is a one-line DataError.
    """
    path = Path(path).expanduser()
    data, lengths = _load_arrays(path, rows)
    _check(path, data, lengths)
    return lengths["observations"], data["observations"].shape[1], data["actions"].shape[1]


def read_d4rl_hdf5(path: str | Path) -> list[Episode]:
    """A D4RL-format HDF5 file as a list of episodes (see the module docstring)."""
    path = Path(path).expanduser()
    data, lengths = _load_arrays(path)
    _check(path, data, lengths)
    obs = data["observations"].astype(np.float32)
    n = len(obs)
    actions = data["actions"].astype(np.float32)
    rewards = data["rewards"].reshape(n).astype(np.float32)
    terminals = data["terminals"].reshape(n).astype(bool)
    timeouts = data["timeouts"].reshape(n).astype(bool) & ~terminals
    given_next = data.get("next_observations")
    ends = np.flatnonzero(terminals | timeouts)
    if not len(ends) or ends[-1] != n - 1:
        ends = np.append(ends, n - 1)  # the file stops mid-episode
    episodes, start = [], 0
    for end in ends:
        rows = np.arange(start, end + 1)
        timeout, cut = bool(timeouts[end]), not (terminals[end] or timeouts[end])
        if given_next is not None:
            nxt = given_next[rows].astype(np.float32)
        else:
            nxt = obs[np.minimum(rows + 1, n - 1)].copy()
            if terminals[end]:
                nxt[-1] = obs[end]  # unknown and unused: masked by the terminal
            elif timeout or cut:
                rows, nxt = rows[:-1], nxt[:-1]  # no next observation in the file
        if len(rows):
            episodes.append(Episode(obs[rows], actions[rows], rewards[rows], nxt,
                                    terminals[rows], timeout=timeout))
        start = end + 1
    return episodes


def d4rl_file_reference(path: str | Path) -> ReferenceReturns | None:
    """Reference returns of a D4RL-format file: its own attributes, else D4RL's table."""
    path = Path(path).expanduser()
    with h5py.File(path, "r") as handle:
        attrs = dict(handle.attrs)
    if "ref_min_score" in attrs and "ref_max_score" in attrs:
        return ReferenceReturns(float(attrs["ref_min_score"]), float(attrs["ref_max_score"]),
                                source=f"{path.name} attributes")
    return d4rl_reference(path.stem)


def write_d4rl_hdf5(path: str | Path, episodes: Sequence[Episode],
                    reference: ReferenceReturns | None = None, env_id: str = "",
                    policy: str = "", next_observations: bool = True) -> Path:
    """Write episodes in D4RL's layout; ``next_observations=False`` writes the old layout."""
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    cat = {f: np.concatenate([getattr(e, f) for e in episodes])
           for f in ("observations", "actions", "rewards", "next_observations", "terminals")}
    timeouts = np.concatenate([np.arange(len(e)) == len(e) - 1 if e.timeout
                               else np.zeros(len(e), bool) for e in episodes])
    tmp = path.with_name(path.name + ".tmp")
    try:
        with h5py.File(tmp, "w") as handle:
            handle["observations"] = cat["observations"]
            handle["actions"] = cat["actions"]
            handle["rewards"] = cat["rewards"]
            handle["terminals"] = cat["terminals"]
            handle["timeouts"] = timeouts
            if next_observations:
                handle["next_observations"] = cat["next_observations"]
            handle.attrs["env_id"] = env_id
            handle.attrs["policy"] = policy
            if reference is not None:
                handle.attrs["ref_min_score"] = reference.random
                handle.attrs["ref_max_score"] = reference.expert
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(path)
    return path
