"""Study data commands (``raystudy.algorithms.snn.data``):

* ``raystudy data make-events OUT_DIR``: the temporal-order event task written as SHD's
  ``shd_train.h5`` and ``shd_test.h5``; read back with ``--set data.name=shd --set
  data.path=OUT_DIR``;
* ``raystudy data make-nmnist OUT_DIR``: scikit-learn's digits (upscaled x3 to 24 x 24)
  moved along N-MNIST's three saccades in front of a simulated DVS, written as real N-MNIST
  ``Train|Test/<digit>/*.bin``; read back with ``--set data.name=nmnist --set
  data.path=OUT_DIR`` (``data.name=nmnist`` without a path generates it once into a cache).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from raystudy import DataCommand, DataError, bounded, check_writable


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir")
    parser.add_argument("--train", type=bounded(int, 2), default=800, help="training samples")
    parser.add_argument("--test", type=bounded(int, 2), default=400, help="test samples")
    parser.add_argument("--classes", type=bounded(int, 2), default=10, help="even, <= units")
    parser.add_argument("--units", type=bounded(int, 2), default=64, help="input channels")
    parser.add_argument("--seed", type=bounded(int, 0), default=0)


def _run(args: argparse.Namespace) -> str:
    from raystudy.algorithms.snn.data import make_temporal_order, write_shd

    out = Path(args.out_dir)
    if out.exists() and not out.is_dir():
        raise DataError(f"make-events: {out} is a file; name a folder")
    check_writable(out if out.exists() else (out.parent if str(out.parent) else Path(".")),
                   "make-events output folder")
    out.mkdir(parents=True, exist_ok=True)
    try:
        for split, n, seed in (("train", args.train, 2 * args.seed),
                               ("test", args.test, 2 * args.seed + 1)):
            write_shd(out / f"shd_{split}.h5", make_temporal_order(
                n, args.classes, args.units, seed=seed))
    except ValueError as exc:
        raise DataError(f"make-events: {exc}") from None
    return (f"wrote {out / 'shd_train.h5'} and {out / 'shd_test.h5'} ({args.classes} classes, "
            f"{args.units} units); run with --set data.name=shd --set data.path={out}")


NMNIST_VERSION = 1
"""Bumped when the generator changes, so a stale cache is not read."""


def make_nmnist(out: Path, n_train: int | None = None, n_test: int | None = None,
                seed: int = 0) -> tuple[int, int, int]:
    """Digits along saccades as N-MNIST ``.bin`` under ``out``: (train, test, events)."""
    from scipy import ndimage

    from raystudy.algorithms.plasticity.data import digits
    from raystudy.algorithms.snn.data import write_nmnist

    d = digits()
    counts, events = [], 0
    for split, x, y, n, s in (("Train", d.x_train, d.y_train, n_train, 2 * seed),
                              ("Test", d.x_test, d.y_test, n_test, 2 * seed + 1)):
        x, y = x.numpy()[:n], y.numpy()[:n]
        images = ndimage.zoom(x.reshape(len(x), 8, 8), (1, 3, 3), order=1).clip(0, 1)
        events += write_nmnist(out, split, images, y, seed=s)
        counts.append(len(y))
    return counts[0], counts[1], events


def cached_nmnist() -> Path:
    """The generated N-MNIST-layout digits (all 1297 / 500), written once per machine into
    the temp folder (atomically: a partial folder is never read)."""
    root = Path(tempfile.gettempdir()) / f"raystudy-nmnist-digits-v{NMNIST_VERSION}"
    if root.is_dir():
        return root
    partial = Path(tempfile.mkdtemp(prefix=root.name + ".partial-", dir=root.parent))
    make_nmnist(partial)
    try:
        os.rename(partial, root)
    except OSError:  # another worker finished first
        shutil.rmtree(partial, ignore_errors=True)
    return root


def _nmnist_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir")
    parser.add_argument("--train", type=bounded(int, 1), default=None,
                        help="training digits (default all 1297)")
    parser.add_argument("--test", type=bounded(int, 1), default=None,
                        help="test digits (default all 500)")
    parser.add_argument("--seed", type=bounded(int, 0), default=0)


def _nmnist_run(args: argparse.Namespace) -> str:
    import importlib.util

    if importlib.util.find_spec("sklearn") is None:
        raise DataError("make-nmnist needs scikit-learn (its digits): "
                        "pip install 'raystudy[spiking]'")
    out = Path(args.out_dir)
    if out.exists() and not out.is_dir():
        raise DataError(f"make-nmnist: {out} is a file; name a folder")
    check_writable(out if out.exists() else (out.parent if str(out.parent) else Path(".")),
                   "make-nmnist output folder")
    n_train, n_test, events = make_nmnist(out, args.train, args.test, args.seed)
    return (f"wrote {n_train} + {n_test} recordings ({events} events) under {out}/Train and "
            f"{out}/Test; run with --set data.name=nmnist --set data.path={out}")


DATA_COMMANDS = (DataCommand("make-events", "write the temporal-order event task in SHD's "
                             ".h5 layout", _arguments, _run),
                 DataCommand("make-nmnist", "write digits moved along saccades as N-MNIST "
                             ".bin files", _nmnist_arguments, _nmnist_run))
