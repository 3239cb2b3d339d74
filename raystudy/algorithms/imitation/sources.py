"""Where a task's expert, random and medium episodes come from, and their reference returns.

Three kinds of source, one naming scheme (``task`` is e.g. ``hopper``):

=============  ======================================  =====================================
source         expert / random / medium                reference returns
=============  ======================================  =====================================
``d4rl``       ``ROOT/{task}_{kind}-v2.hdf5``          the expert file's attributes, else
               (D4RL's own file names)                 D4RL's table (``scores.py``)
``minari``     ``mujoco/{task}/expert-v0``,            the expert dataset's metadata
               ``.../simple-v0``, ``.../medium-v0``
``generate``   rolled out here once, cached as         measured by the generator, stored
               ``CACHE/{env}-{kind}-{n}.hdf5``         in the file's attributes
=============  ======================================  =====================================

An explicit path (or Minari id) for a kind replaces the derived one. Evaluation runs in
the task's gymnasium environment (``TASKS``): MuJoCo tasks in their maintained v5
versions, which differ a little from the v2 environments D4RL's data came from.

:func:`assemble` reads the sources, composes the good / bad / unlabeled sets
(``compose.py``), adds the union ``all`` (each episode once), normalises states by the
unlabeled set's mean and std and maps actions to [-1, 1]. :class:`Sampler` draws the
minibatches; :func:`save_offline_data` / :func:`load_offline_data` write the sets as
``.npy`` rows for Ray Data and read a worker's shard back.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from ...errors import DataError, MissingDataError
from .compose import SLICE_LENGTH, MixSpec, compose
from .d4rl import d4rl_file_reference, inspect_d4rl_hdf5, read_d4rl_hdf5, write_d4rl_hdf5
from .episodes import FIELDS, Episode, Transitions
from .experts import generate
from .minari_io import minari_dims, minari_reference, read_minari
from .rollouts import make_env
from .scores import ReferenceReturns, d4rl_reference

TASKS = {"pendulum": "Pendulum-v1", "invertedpendulum": "InvertedPendulum-v5",
         "hopper": "Hopper-v5", "halfcheetah": "HalfCheetah-v5", "walker2d": "Walker2d-v5",
         "ant": "Ant-v5"}
KINDS = ("expert", "random", "medium")
SOURCES = ("generate", "d4rl", "minari")
MINARI_NAMES = {"expert": "expert", "random": "simple", "medium": "medium"}
GENERATE_SEEDS = {"expert": 0, "random": 1_000_000, "medium": 2_000_000}


# D4RL's ant-v2 data have 111 observation dimensions (contact forces of all 14 bodies);
# Ant-v5 has 105 (it leaves out the world body), Ant-v4 with contact forces has D4RL's 111.
D4RL_TASKS = {"ant": "Ant-v4(use_contact_forces=True)"}


def env_id(task: str, source: str = "generate") -> str:
    """The gymnasium id evaluation runs in (with keyword arguments in parentheses where
    the data need them: see ``rollouts.make_env``)."""
    if task not in TASKS:
        raise ValueError(f"data.task={task!r} is not one of {', '.join(TASKS)}")
    return D4RL_TASKS.get(task, TASKS[task]) if source == "d4rl" else TASKS[task]


def locate(source: str, task: str, kind: str, root: str, explicit: Mapping[str, str]) -> str:
    """The file (d4rl) or dataset id (minari) of ``kind``; ``explicit[kind]`` wins."""
    if explicit.get(kind):
        return str(Path(explicit[kind]).expanduser()) if source == "d4rl" else explicit[kind]
    if source == "d4rl":
        return str(Path(root).expanduser() / f"{task}_{kind}-v2.hdf5")
    if source == "minari":
        return f"mujoco/{task}/{MINARI_NAMES[kind]}-v0"
    raise ValueError(f"source {source!r} has no fixed location")


def generated_file(cache_dir: str, task: str, kind: str, episodes: int,
                   expert_dir: str = "", reference_episodes: int = 100) -> Path:
    """The cached generated episodes of ``kind``, generated first if missing.

    A lock file serialises concurrent trials, so one of them generates and the others
    read its result.
    """
    env = env_id(task)
    folder = Path(cache_dir).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{env.lower()}-{kind}-{episodes}.hdf5"
    with open(folder / ".generate.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.is_file():
            data, reference = generate(env, kind, episodes, GENERATE_SEEDS[kind],
                                       expert_dir or None, reference_episodes)
            write_d4rl_hdf5(path, data, reference, env_id=env, policy=kind)
    return path


def load(source: str, where: str) -> list[Episode]:
    """The episodes of a D4RL-format file or a Minari dataset."""
    return read_minari(where) if source == "minari" else read_d4rl_hdf5(where)


def reference(source: str, expert_where: str, task: str) -> ReferenceReturns:
    """Reference returns for a task's data (see the module docstring)."""
    found = (minari_reference(expert_where) if source == "minari"
             else d4rl_file_reference(expert_where))
    if found is None and source == "minari":
        found = d4rl_reference(task)
    if found is None:
        raise DataError(f"{expert_where}: no reference returns (no ref_min_score/ref_max_score "
                        f"and task {task!r} is not in D4RL's table); set data.reference")
    return found


def check_sources(source: str, task: str, where: Mapping[str, str]) -> None:
    """Every file or dataset exists and has this task's dimensions (one line if not)."""
    space = make_env(env_id(task, source))
    dims = (space.observation_space.shape[0], space.action_space.shape[0])
    if source == "d4rl":
        missing = [f"{kind}: {p}" for kind, p in where.items() if not Path(p).is_file()]
        if missing:
            raise MissingDataError("missing D4RL-format file(s) " + "; ".join(missing) + " (copy "
                            "D4RL's HDF5 files there under their own names, or write files "
                            "with `raystudy data make-offline-rl`)")
    for kind, place in where.items():
        found = minari_dims(place) if source == "minari" else inspect_d4rl_hdf5(place)[1:]
        if tuple(found) != dims:
            raise DataError(f"{place} ({kind}): observations x actions are {found[0]} x "
                            f"{found[1]}; {env_id(task, source)} has {dims[0]} x {dims[1]}")


@dataclass
class OfflineData:
    """The good, bad, unlabeled and all sets as normalised transitions, and their context.

    States are ``(s - shift) / scale``; actions are mapped from the env's box
    ``[low, high]`` to [-1, 1]. ``hidden_expert`` marks the unlabeled transitions that
    came from expert episodes, and ``sets["oracle"]`` holds them (hidden labels: for
    diagnostics and the oracle reference row only, never for a method).
    """

    sets: dict[str, Transitions]
    hidden_expert: np.ndarray
    reference: ReferenceReturns
    env_id: str
    shift: np.ndarray
    scale: np.ndarray
    low: np.ndarray
    high: np.ndarray
    record: dict[str, Any]


def assemble(source: str, task: str, where: Mapping[str, str], spec: MixSpec,
             overlap: bool = True, reference_returns: ReferenceReturns | None = None,
             state_norm: bool = True, unit: Literal["slice", "episode"] = "slice",
             slice_length: int = SLICE_LENGTH) -> OfflineData:
    """Read the sources at ``where``, compose ``spec`` (undesirable trajectories: slices of
    ``slice_length`` transitions or episodes) and normalise (module docstring)."""
    try:
        mix = compose(load(source, where["expert"]), load(source, where[spec.bad_source]),
                      spec, overlap, unit, slice_length)
    except ValueError as exc:
        raise DataError(f"data.mix={spec.label}: {exc}") from None
    ref = reference_returns or reference(source, where["expert"], task)
    unique = {id(e): e for e in [*mix.good, *mix.bad, *mix.unlabeled]}
    sets = {"good": Transitions.from_episodes(mix.good),
            "bad": Transitions.from_episodes(mix.bad),
            "unlabeled": Transitions.from_episodes(mix.unlabeled),
            "all": Transitions.from_episodes(list(unique.values()))}
    hidden_expert = [e for e, flag in zip(mix.unlabeled, mix.unlabeled_is_expert, strict=True)
                     if flag]
    if hidden_expert:  # an oracle's data: the unlabeled set's expert part, by hidden label
        sets["oracle"] = Transitions.from_episodes(hidden_expert)
    evaluation_env = env_id(task, source)
    env = make_env(evaluation_env)
    obs = sets["unlabeled"].observations
    dim = obs.shape[1]
    shift, scale = ((obs.mean(0), obs.std(0) + 1e-3) if state_norm
                    else (np.zeros(dim, np.float32), np.ones(dim, np.float32)))
    low, high = env.action_space.low, env.action_space.high
    initial = (sets["all"].initial_observations - shift) / scale
    for t in sets.values():
        t.observations = (t.observations - shift) / scale
        t.next_observations = (t.next_observations - shift) / scale
        t.initial_observations = initial  # s_0 of the DICE duals: the union's episodes
        t.actions = np.clip(2 * (t.actions - low) / (high - low) - 1, -1, 1)
    record = {**mix.record, "reference": {"random": ref.random, "expert": ref.expert,
                                          "source": ref.source}, "where": dict(where)}
    return OfflineData(sets, mix.unlabeled_expert_mask(), ref, evaluation_env, shift, scale,
                       low, high, record)


class Sampler:
    """Minibatches of the sources a learner reads (+ initial states), from one generator.

    The unlabeled minibatch also carries ``is_expert``, the hidden label, which learners
    may log but never train on.
    """

    def __init__(self, data: OfflineData, seed: int, device: torch.device | str = "cpu") -> None:
        self.data, self.device = data, device
        self.rng = np.random.default_rng(seed)

    def batch(self, names: tuple[str, ...], n: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in names:
            t = self.data.sets[name]
            index = self.rng.integers(0, len(t), size=n)
            out[name] = {f: torch.as_tensor(getattr(t, f)[index], dtype=torch.float32,
                                            device=self.device) for f in FIELDS}
            if name == "unlabeled":
                out[name]["is_expert"] = torch.as_tensor(
                    self.data.hidden_expert[index], dtype=torch.float32, device=self.device)
        some = next(iter(self.data.sets.values()))  # every set carries the union's s_0
        out["initial"] = some.sample_initial(self.rng, n, self.device)
        return out




def save_offline_data(data: OfflineData, folder: Path) -> None:
    """Each set as ``NAME.npy`` rows (``Transitions.as_array``), ``initial.npy``, ``meta.json``.

    Written into a private folder renamed into place, so concurrent writers never mix
    their files (the first rename wins; the others discard theirs).
    """
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}-"))
    for name, t in data.sets.items():
        np.save(tmp / f"{name}.npy", t.as_array())
    np.save(tmp / "initial.npy", data.sets["all"].initial_observations)
    meta = {"shift": data.shift.tolist(), "scale": data.scale.tolist(),
            "low": data.low.tolist(), "high": data.high.tolist(), "env_id": data.env_id,
            "record": data.record, "sets": list(data.sets)}
    (tmp / "meta.json").write_text(json.dumps(meta, default=str))
    try:
        tmp.rename(folder)
    except OSError:  # another process got there first
        shutil.rmtree(tmp, ignore_errors=True)


def load_offline_data(folder: Path, rows: Callable[[str], np.ndarray],
                      names: tuple[str, ...] | None = None) -> OfflineData:
    """Inverse of :func:`save_offline_data` for the sets ``names`` (default: all saved);
    ``rows(name)`` returns a set's rows (a worker's shard) and ``rows("initial")`` the
    initial observations."""
    meta = json.loads((folder / "meta.json").read_text())
    initial = rows("initial")
    sets = {name: Transitions.from_array(rows(name), len(meta["shift"]))
            for name in (names or meta["sets"])}
    for t in sets.values():
        t.initial_observations = initial
    ref = meta["record"]["reference"]
    unlabeled = len(sets["unlabeled"]) if "unlabeled" in sets else 0  # BC-good reads none
    return OfflineData(sets, np.zeros(unlabeled, bool),
                       ReferenceReturns(ref["random"], ref["expert"], ref["source"]),
                       meta["env_id"],
                       *(np.asarray(meta[k], np.float32) for k in ("shift", "scale", "low",
                                                                    "high")),
                       meta["record"])
