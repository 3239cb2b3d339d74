"""``raystudy data make-events OUT_DIR``: the temporal-order event task written as SHD's
``shd_train.h5`` and ``shd_test.h5`` (``raystudy.algorithms.snn.data``); read back with
``--set data.name=shd --set data.path=OUT_DIR``."""

from __future__ import annotations

import argparse
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


DATA_COMMANDS = (DataCommand("make-events", "write the temporal-order event task in SHD's "
                             ".h5 layout", _arguments, _run),)
