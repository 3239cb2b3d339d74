"""``raystudy data ...``: make datasets the studies read, with clear errors."""

from __future__ import annotations

from pathlib import Path

from raystudy.errors import DataError


def make_token_dataset(out_dir: str, source: str, seq_len: int, max_bytes: int) -> Path:
    """Byte-tokenize local text files into ``train.npy``/``val.npy`` (see algorithms.text)."""
    from raystudy.algorithms.text import text_bytes, write_token_files

    if seq_len < 2 or max_bytes < 10 * seq_len:
        raise DataError("make-tokens needs --seq-len >= 2 and --max-bytes >= 10 * seq-len")
    try:
        tokens = text_bytes(source, max_bytes)
        return write_token_files(out_dir, tokens, seq_len)
    except (FileNotFoundError, ValueError) as exc:
        raise DataError(str(exc)) from None


def make_anndata(out_dir: str, cells: int, genes: int, plates: int, density: float,
                 seed: int = 0) -> list[Path]:
    """A synthetic Tahoe-like collection, one .h5ad per plate (see algorithms.sampling)."""
    from raystudy.algorithms.sampling import make_anndata_collection

    return make_anndata_collection(out_dir, cells, genes, plates, density, seed=seed,
                                   progress=True)


def make_offline_rl(out_dir: str, env_id: str, policy: str, episodes: int, seed: int = 0,
                    expert_dir: str | None = None,
                    reference_episodes: int = 100) -> tuple[Path, str, str]:
    """Roll out a policy; write a D4RL-format HDF5 file in ``out_dir`` and a Minari dataset.

    Returns the file, the Minari id and a one-line summary with the reference returns.
    """
    from raystudy.algorithms.imitation import returns, write_d4rl_hdf5, write_minari
    from raystudy.algorithms.imitation.experts import dataset_names, generate
    from raystudy.algorithms.imitation.minari_io import check_new_minari_id

    file_name, minari_id = dataset_names(env_id, policy)
    check_new_minari_id(minari_id)
    try:
        data, reference = generate(env_id, policy, episodes, seed, expert_dir,
                                   reference_episodes)
    except (ValueError, FileNotFoundError) as exc:
        raise DataError(f"make-offline-rl: {exc}") from None
    path = write_d4rl_hdf5(Path(out_dir) / file_name, data, reference, env_id=env_id,
                           policy=policy)
    store = write_minari(minari_id, data, env_id, reference, algorithm=f"raystudy {policy}",
                         description=f"{episodes} {policy} episodes of {env_id}")
    values = returns(data)
    summary = (f"{episodes} {policy} episodes, return {values.mean():.1f} +- {values.std():.1f} "
               f"(score {reference.score(values.mean()):.1f}; reference random "
               f"{reference.random:.1f}, expert {reference.expert:.1f}); Minari dataset in {store}")
    return path, minari_id, summary
