"""``raystudy data make-compositions OUT``: a table of counts in two groups, in the layout the
study's ``file`` scenario reads (``raystudy.algorithms.two_sample.read_table``).

A header row ``group,taxon_1,...,taxon_D``, then one row per sample: its group label
(``control`` rows first, then ``treated``) and D counts. Counts are Dirichlet-multinomial
at ``--depth`` reads per sample: control from Dir(a 1), treated from Dir((1 + c) a 1), the
same mean composition, more concentrated (the log-ratio mean tests' blind spot), so
``data.scenario=file/1`` is an alternative and ``file/0`` a null. ``.tsv``, ``.tab`` and
``.txt`` files are tab-separated, anything else comma-separated (as the reader decides).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from raystudy import DataCommand, DataError, bounded, check_writable, storage

GROUPS = ("control", "treated")


def make_compositions(out: str, rows: int, parts: int, depth: int, a: float,
                      concentration: float, seed: int = 0) -> Path:
    """Write the table (module docstring) to ``out`` and return its path."""
    import numpy as np

    path = Path(out)
    if path.is_dir():
        raise DataError(f"make-compositions: {out} is a folder; name the table file "
                        f"(e.g. {path / 'counts.tsv'})")
    check_writable(path.parent if str(path.parent) else ".", "make-compositions output folder",
                   need_bytes=rows * parts * 16 + 1024**2)
    rng = np.random.default_rng(seed)
    alphas = (np.full(parts, a), np.full(parts, (1 + concentration) * a))
    delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab", ".txt") else ","
    lines = [delimiter.join(["group", *(f"taxon_{j + 1}" for j in range(parts))])]
    for label, alpha in zip(GROUPS, alphas, strict=True):
        counts = rng.multinomial(depth, rng.dirichlet(alpha, rows))
        lines += [delimiter.join([label, *map(str, row)]) for row in counts]
    path.parent.mkdir(parents=True, exist_ok=True)
    storage.write_text_atomic(path, "\n".join(lines) + "\n")
    return path


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="the table to write (.csv, or .tsv for tabs)")
    parser.add_argument("--rows", type=bounded(int, 2), default=40,
                        help="samples per group (default 40)")
    parser.add_argument("--parts", type=bounded(int, 2), default=6,
                        help="parts (taxa) per sample (default 6)")
    parser.add_argument("--depth", type=bounded(int, 1), default=200,
                        help="counts per sample (default 200; low depths give exact zeros)")
    parser.add_argument("--a", type=bounded(float, 1e-6), default=1.0,
                        help="control's Dirichlet parameter per part (default 1)")
    parser.add_argument("--concentration", type=bounded(float, 0.0), default=1.0,
                        help="treated is (1 + c) times as concentrated (default 1; 0: a null)")
    parser.add_argument("--seed", type=bounded(int, 0), default=0)


def _run(args: argparse.Namespace) -> str:
    path = make_compositions(args.out, args.rows, args.parts, args.depth, args.a,
                             args.concentration, args.seed)
    return (f"wrote {path} ({len(GROUPS)} groups x {args.rows} samples, {args.parts} parts, "
            f"{args.depth} counts each; run with --set data.scenario=file/1 "
            f"--set data.path={path})")


DATA_COMMANDS = (DataCommand("make-compositions", "write a CSV/TSV of counts in two groups "
                             "(the file scenario's format)", _arguments, _run),)
