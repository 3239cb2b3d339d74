"""The contrastive_imitation study's data: which sets each method reads, where each kind
of episode comes from (generated here, D4RL's HDF5 files or a Minari store), the
driver-side check of every file before Ray starts, and ``raystudy data make-offline-rl``
(offline-RL episodes as a D4RL-format HDF5 file and a Minari dataset, both or neither).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from raystudy import DataCommand, DataError, UserError, bounded, check_writable
from raystudy.contract.data import describe_os_error, is_disk_full


def source_locations(data: Any) -> dict[str, str]:
    """Where each kind's episodes are read from (files, Minari ids or generated files);
    ``data``: the config's DataConfig."""
    from raystudy.algorithms.imitation import MixSpec, sources  # torch: when a run reads data

    kinds = ("expert", MixSpec.parse(data.mix).bad_source)
    if data.source == "generate":
        counts = {"expert": data.expert_episodes, "random": data.random_episodes,
                  "medium": data.medium_episodes}
        return {k: str(sources.generated_file(data.cache_dir, data.task, k, counts[k],
                                              data.expert_dir, data.reference_episodes))
                for k in kinds}
    explicit = {"expert": data.expert, "random": data.random, "medium": data.medium}
    return {k: sources.locate(data.source, data.task, k, data.root, explicit) for k in kinds}


def check_data(config: Any) -> None:
    """On the driver: every file exists and fits the task's env; generate missing data."""
    from raystudy.studies.contrastive_imitation.config import SAC  # torch, as sources

    if config.method == SAC:
        return  # trains an expert: reads no data
    try:
        where = source_locations(config.data)  # generates (once) what a generate source lacks
    except (ValueError, FileNotFoundError) as exc:
        raise DataError(f"data.source={config.data.source}: {exc}") from None
    if config.data.source != "generate":
        from raystudy.algorithms.imitation import sources

        sources.check_sources(config.data.source, config.data.task, where)


# ----------------------------------------------------------------------------- make-offline-rl
MB = 1024**2


def make_offline_rl(out_dir: str, env_id: str, policy: str, episodes: int, seed: int = 0,
                    expert_dir: str | None = None,
                    reference_episodes: int = 100) -> tuple[Path, str, str]:
    """Roll out a policy; write a D4RL-format HDF5 file in ``out_dir`` and a Minari dataset.

    Returns the file, the Minari id and a one-line summary with the reference returns.
    """
    from raystudy import require_extra

    require_extra("data make-offline-rl", "imitation", ("gymnasium", "mujoco", "minari"))
    from raystudy.algorithms.imitation import returns, write_d4rl_hdf5, write_minari
    from raystudy.algorithms.imitation.experts import dataset_names, generate
    from raystudy.algorithms.imitation.minari_io import check_new_minari_id, minari_store

    file_name, minari_id = dataset_names(env_id, policy)
    check_new_minari_id(minari_id)
    if (Path(out_dir) / file_name).exists():
        raise DataError(f"{Path(out_dir) / file_name} already exists; remove it first or pick "
                        "another folder")
    check_writable(out_dir, "make-offline-rl output folder")
    check_writable(minari_store(), "Minari store (MINARI_DATASETS_PATH)")
    try:
        data, reference = generate(env_id, policy, episodes, seed, expert_dir,
                                   reference_episodes)
    except (ValueError, FileNotFoundError) as exc:
        raise DataError(f"make-offline-rl: {exc}") from None
    path = Path(out_dir) / file_name
    try:
        write_d4rl_hdf5(path, data, reference, env_id=env_id, policy=policy)
        store = write_minari(minari_id, data, env_id, reference,
                             algorithm=f"raystudy {policy}",
                             description=f"{episodes} {policy} episodes of {env_id}")
    except BaseException as exc:
        path.unlink(missing_ok=True)  # never half a result: both formats or neither
        if not isinstance(exc, OSError | RuntimeError):
            raise
        if isinstance(exc, OSError):
            raise UserError(f"make-offline-rl: {describe_os_error(exc)}") from None
        if not is_disk_full(exc):
            raise
        raise UserError(f"make-offline-rl: no space left on device for {path}") from None
    values = returns(data)
    summary = (f"{episodes} {policy} episodes, return {values.mean():.1f} +- {values.std():.1f} "
               f"(score {reference.score(values.mean()):.1f}; reference random "
               f"{reference.random:.1f}, expert {reference.expert:.1f}); Minari dataset in {store}")
    return path, minari_id, summary


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir")
    parser.add_argument("--env", required=True, help="gymnasium id, e.g. Pendulum-v1")
    parser.add_argument("--policy", required=True, choices=("expert", "medium", "random"))
    parser.add_argument("--episodes", type=bounded(int, 1), required=True)
    parser.add_argument("--seed", type=bounded(int, 0), default=0,
                        help="reset seed of the first episode")
    parser.add_argument("--expert-dir", default=None,
                        help="MuJoCo tasks: folder with the SAC trainer's expert.pt, medium.pt")
    parser.add_argument("--reference-episodes", type=bounded(int, 1), default=100,
                        help="episodes each of the random and expert policy for the "
                        "reference returns (default 100)")


def _run(args: argparse.Namespace) -> str:
    path, minari_id, summary = make_offline_rl(args.out_dir, args.env, args.policy,
                                               args.episodes, args.seed, args.expert_dir,
                                               args.reference_episodes)
    return f"wrote {path} and Minari dataset {minari_id}: {summary}"


DATA_COMMANDS = (DataCommand("make-offline-rl", "roll out a policy; write a D4RL-format "
                             "HDF5 file and a Minari dataset (in MINARI_DATASETS_PATH) with the "
                             "reference returns", _arguments, _run),)
