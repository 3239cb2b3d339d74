"""``raystudy data make-temporal-world OUT``: the generated world's yearly snapshots as
per-year token files (``OUT/YEAR/train.npy``, rows of seq_len + 1 byte ids, uint16),
held-out general text (``OUT/val.npy``) and the world's questions in KairosQA's schema
(``OUT/kairosqa.jsonl``), and the world they were written from (``OUT/world.json``, which
the recipe checks before its dated probes count); read back with ``--set data.source=tokens --set
data.path=OUT --set data.kairosqa=OUT/kairosqa.jsonl`` (same world flags and seed)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from raystudy import DataCommand, DataError, bounded, check_writable

WORLD_FILE = "world.json"


def world_manifest(entities: int, relations: int, first_year: int, years: int, values: int,
                   p_change: float, zipf: float, seed: int) -> dict[str, Any]:
    """What fixes a generated world: written beside its token files, compared by the recipe
    with its own world so the dated probes only count where they ask about the data."""
    return {"entities": entities, "relations": relations, "first_year": first_year,
            "years": years, "values": values, "p_change": float(p_change),
            "zipf": float(zipf), "seed": seed}


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir")
    parser.add_argument("--entities", type=bounded(int, 1), default=16)
    parser.add_argument("--relations", type=bounded(int, 1), default=2)
    parser.add_argument("--first-year", type=int, default=2020)
    parser.add_argument("--years", type=bounded(int, 3), default=6)
    parser.add_argument("--values", type=bounded(int, 3), default=12)
    parser.add_argument("--p-change", type=float, default=0.6)
    parser.add_argument("--rows-per-year", type=bounded(int, 1), default=3200)
    parser.add_argument("--val-rows", type=bounded(int, 1), default=128)
    parser.add_argument("--seq-len", type=bounded(int, 2), default=64)
    parser.add_argument("--hist-share", type=float, default=0.2)
    parser.add_argument("--seed", type=bounded(int, 0), default=0,
                        help="the trial seed (train.seed) whose world to write")


def _run(args: argparse.Namespace) -> str:
    import numpy as np

    from raystudy.algorithms.temporal import (
        Mixture,
        filler_rows,
        make_world,
        snapshot,
        split_filler,
        world_records,
        write_kairosqa,
    )
    from raystudy.algorithms.text import text_bytes

    out = Path(args.out_dir)
    if out.exists() and not out.is_dir():
        raise DataError(f"make-temporal-world: {out} is a file; name a folder")
    check_writable(out if out.exists() else (out.parent if str(out.parent) else Path(".")),
                   "make-temporal-world output folder")
    try:
        world = make_world(args.entities, args.relations, args.first_year, args.years,
                           args.values, args.p_change, seed=args.seed)
        mix = Mixture(hist_share=args.hist_share)
    except ValueError as exc:
        raise DataError(f"make-temporal-world: {exc}") from None
    train, val = split_filler(text_bytes("stdlib", 400_000))
    for t, year in enumerate(world.years):
        (out / str(year)).mkdir(parents=True, exist_ok=True)
        rows = snapshot(world, t, args.rows_per_year, args.seq_len, mix, train, args.seed)
        np.save(out / str(year) / "train.npy", rows.astype(np.uint16))
    np.save(out / "val.npy", filler_rows(val, args.val_rows, args.seq_len, args.seed)
            .astype(np.uint16))
    write_kairosqa(out / "kairosqa.jsonl", world_records(world, seed=args.seed))
    manifest = world_manifest(args.entities, args.relations, args.first_year, args.years,
                              args.values, args.p_change, 0.0, args.seed)
    (out / WORLD_FILE).write_text(json.dumps(manifest, indent=1) + "\n")
    return (f"wrote {len(world.years)} years x {args.rows_per_year} rows under {out}, "
            f"{out / 'val.npy'} and {out / 'kairosqa.jsonl'} ({len(world.kept)} questions); run "
            f"with --set data.source=tokens --set data.path={out} "
            f"--set data.kairosqa={out / 'kairosqa.jsonl'} --set train.seed={args.seed}")


DATA_COMMANDS = (DataCommand("make-temporal-world", "write the generated temporal world as "
                             "per-year token files and KairosQA .jsonl", _arguments, _run),)
