"""``raystudy data ...``: make datasets the studies read, with clear errors.

The generators are the studies' own (byte tokens for optimizer_robustness, a synthetic
h5ad collection for cell_classifier, offline-RL sets for contrastive_imitation), so they
live beside the studies, not in the platform, which knows no paper.

Each command checks its output folder first (a probe write, and room for the estimated
size), so a read-only mount, a permission problem or a full disk is one line naming the
folder before anything is written; the writers themselves write to temporary files and
rename them, and remove the temporaries when a write fails.
"""

from __future__ import annotations

import errno
from pathlib import Path

from raystudy.errors import DataError, UserError
from raystudy.platform.preflight import check_writable, describe_os_error

MB = 1024**2


def _disk_full(exc: BaseException) -> bool:
    """h5py reports a failed write as RuntimeError carrying errno 28 in its text."""
    return getattr(exc, "errno", None) == errno.ENOSPC or "errno = 28" in str(exc)


def make_token_dataset(out_dir: str, source: str, seq_len: int, max_bytes: int) -> Path:
    """Byte-tokenize local text files into ``train.npy``/``val.npy`` (see algorithms.text)."""
    from raystudy.algorithms.text import text_bytes, write_token_files

    if seq_len < 2 or max_bytes < 10 * seq_len:
        raise DataError("make-tokens needs --seq-len >= 2 and --max-bytes >= 10 * seq-len")
    try:
        tokens = text_bytes(source, max_bytes)
    except (FileNotFoundError, ValueError) as exc:
        raise DataError(str(exc)) from None
    check_writable(out_dir, "make-tokens output folder", need_bytes=2 * tokens.size + MB)
    try:
        return write_token_files(out_dir, tokens, seq_len)
    except ValueError as exc:
        raise DataError(str(exc)) from None
    except OSError as exc:
        if exc.errno is not None or "written" not in str(exc):
            raise
        raise UserError(f"make-tokens output folder {out_dir}: no space left on device "
                        f"({exc})") from None


def make_anndata(out_dir: str, cells: int, genes: int, plates: int, density: float,
                 seed: int = 0) -> list[Path]:
    """A synthetic Tahoe-like collection, one .h5ad per plate (see algorithms.sampling)."""
    from raystudy.algorithms.sampling import make_anndata_collection

    # float32 counts + int32 column indices per non-zero, int64 indptr, obs: 10% margin.
    estimate = int(1.1 * (cells * genes * density * 8 + cells * 24)) + 4 * MB * plates
    check_writable(out_dir, "make-anndata output folder", need_bytes=estimate)
    try:
        return make_anndata_collection(out_dir, cells, genes, plates, density, seed=seed,
                                       progress=True)
    except (OSError, RuntimeError) as exc:
        if not _disk_full(exc):
            raise
        raise UserError(f"make-anndata output folder {out_dir}: no space left on device "
                        f"(the collection needs about {estimate / MB:.0f} MB)") from None


def make_offline_rl(out_dir: str, env_id: str, policy: str, episodes: int, seed: int = 0,
                    expert_dir: str | None = None,
                    reference_episodes: int = 100) -> tuple[Path, str, str]:
    """Roll out a policy; write a D4RL-format HDF5 file in ``out_dir`` and a Minari dataset.

    Returns the file, the Minari id and a one-line summary with the reference returns.
    """
    from raystudy.platform.registry import require_extra

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
        if not _disk_full(exc):
            raise
        raise UserError(f"make-offline-rl: no space left on device for {path}") from None
    values = returns(data)
    summary = (f"{episodes} {policy} episodes, return {values.mean():.1f} +- {values.std():.1f} "
               f"(score {reference.score(values.mean()):.1f}; reference random "
               f"{reference.random:.1f}, expert {reference.expert:.1f}); Minari dataset in {store}")
    return path, minari_id, summary
