"""How a fetch is read: h5py calls vs a memory map vs pread vs pread + WILLNEED hints.

The four ways ``H5ADCollection`` could read the sorted spans of a block-sampled fetch,
side by side in one process over the same fetches (the collection of
``bench/sampling.py``), so the choice in ``raystudy/algorithms/sampling/direct.py``
rests on a measurement:

* h5py: one h5py slice per span (``direct=False``);
* mmap: byte offsets from the chunk index, spans copied out of a memory map;
* pread: the same offsets, one ``pread`` per span into the output buffer;
* pread+willneed (the default): ``posix_fadvise(WILLNEED)`` for every span of the
  fetch first, then the preads.

    .venv/bin/python bench/read_paths.py --data ./data/bench_tahoe              # warm
    flock /tmp/raystudy-ray.lock .venv/bin/python bench/read_paths.py --regime cold
    flock /tmp/raystudy-ray.lock .venv/bin/python bench/read_paths.py --regime throttled \\
        --settings 16/256 --fetches 1 --reps 1

``cold`` drops the page cache before every measurement and ``throttled`` also caps the
process's reads at 3,000 IOPS and 125 MB/s (both as in ``bench/sampling.py``; root).
Prints cells/s (median over ``--reps``) and each path's speed relative to the default.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from sampling import collection, drop_page_cache, positive_int, settings, throttle_reads

from raystudy.algorithms.sampling import BlockShuffling, H5ADCollection, plan_fetches
from raystudy.algorithms.sampling.direct import DirectSlices

PATHS = ("h5py", "mmap", "pread", "pread+willneed")


class MappedSlices(DirectSlices):
    """The memory-map variant: spans copied out of a map of the file, no hints."""

    def __call__(self, start: int, stop: int, out: np.ndarray) -> None:
        if getattr(self, "_map", None) is None:
            self._map = np.memmap(self.path, dtype=np.uint8, mode="r")
        for at, end, offset in self._parts(start, stop):
            raw = self._map[offset : offset + (end - at) * self.row_bytes]
            out[at - start : end - start] = raw.view(self.dtype).reshape(end - at, *self.shape[1:])

    def will_need(self, starts: np.ndarray, stops: np.ndarray) -> None:
        """No hints: a page fault reads the device's read-ahead window around the page."""


class PreadOnly(DirectSlices):
    """The pread variant without the WILLNEED hints."""

    def will_need(self, starts: np.ndarray, stops: np.ndarray) -> None:
        """No hints: each pread waits for its own read."""


def open_collection(paths: list[Path], path_kind: str) -> H5ADCollection:
    coll = H5ADCollection(paths, obs_columns=["plate"], direct=path_kind != "h5py")
    variant = {"mmap": MappedSlices, "pread": PreadOnly}.get(path_kind)
    if variant is not None:
        for reader in coll.readers:
            for key in ("X/data", "X/indices"):
                d = reader._slices(key)
                reader._handles[key] = variant(d.path, d.shape, d.dtype, d.first_row, d.byte_offset)
    return coll


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="./data/bench_tahoe", help="collection of bench/sampling.py")
    p.add_argument("--regime", choices=("warm", "cold", "throttled"), default="warm")
    p.add_argument("--settings", type=settings, default=[(1, 256), (4, 256), (16, 256)],
                   metavar="B/F,...", help="block/fetch-factor pairs (default 1/256,4/256,16/256)")
    p.add_argument("--fetches", type=positive_int, default=3, help="fetches read per measurement")
    p.add_argument("--reps", type=positive_int, default=3, help="repetitions (median reported)")
    p.add_argument("--batch-size", type=positive_int, default=64)
    return p.parse_args()


def main() -> None:
    args = parse_args()
    args.cells, args.genes, args.plates, args.density = 1_000_000, 2000, 8, 0.1
    paths = collection(args)
    if args.regime != "warm":
        try:
            drop_page_cache()
            if args.regime == "throttled":
                throttle_reads(paths[0], 3000, 125.0)
        except OSError as err:
            print(f"--regime {args.regime} needs root on Linux (page cache drop, cgroup): {err}",
                  file=sys.stderr)
            sys.exit(2)
    print(f"# {args.regime}: {args.fetches} fetch(es) per measurement, median of {args.reps}")
    print("\n| block | fetch factor | " + " | ".join(f"{k} cells/s" for k in PATHS)
          + " | " + " | ".join(f"{k} / default" for k in PATHS[:-1]) + " |")
    print("|---:|---:|" + "---:|" * (2 * len(PATHS) - 1))
    for block, f in args.settings:
        fetches = plan_fetches(BlockShuffling(block), 1_000_000, args.batch_size, f, 0, epoch=0)
        fetches = fetches[: args.fetches]
        cells = sum(len(fetch.rows) for fetch in fetches)
        rates: dict[str, list[float]] = {k: [] for k in PATHS}
        for _ in range(args.reps):
            for kind in PATHS:
                coll = open_collection(paths, kind)
                if args.regime != "warm":
                    drop_page_cache()
                start = time.perf_counter()
                for fetch in fetches:
                    coll.read(fetch.rows, "csr")
                rates[kind].append(cells / (time.perf_counter() - start))
                coll.close()
        median = {k: statistics.median(v) for k, v in rates.items()}
        base = median["pread+willneed"]
        print(f"| {block} | {f} | " + " | ".join(f"{median[k]:,.0f}" for k in PATHS) + " | "
              + " | ".join(f"{median[k] / base:.2f}x" for k in PATHS[:-1]) + " |", flush=True)


if __name__ == "__main__":
    main()
