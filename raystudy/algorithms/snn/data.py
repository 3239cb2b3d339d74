"""Data of the SNN study, offline: readers and the generated temporal-order event task.

* ``digits``, ``mnist``, ``fashion`` (MNIST's IDX layout), ``cifar10`` (python pickles):
  the readers of ``raystudy.algorithms.plasticity.data``; images flattened, in [0, 1].
* SHD's ``.h5`` layout (Cramer et al. 2020): ``spikes/times`` (vlen float, s),
  ``spikes/units`` (vlen int), ``labels``, ``extra/speaker``: :func:`write_shd`,
  :func:`read_shd` (``shd_train.h5``/``shd_test.h5``, 700 units for the real set).
* ``temporal_order``: a generated task in that layout whose classes differ only in
  temporal order within pairs: class ``2p`` fires channel group ``a_p`` then ``b_p``,
  class ``2p + 1`` fires ``b_p`` then ``a_p``, so whole-recording counts (T = 1) cannot
  beat 50 % on it (the Bayes ceiling for counts), while two or more bins can.
* N-MNIST ``.bin`` (Orchard et al. 2015): 5 bytes per event, x = b0, y = b1, polarity =
  b2 >> 7, t_us = ((b2 & 127) << 16) | (b3 << 8) | b4: :func:`write_nmnist_bin`,
  :func:`read_nmnist_bin`, and :func:`read_nmnist` over ``Train|Test/<digit>/*.bin``;
  :func:`saccade_events` moves an image along N-MNIST's three saccades (a triangle) in
  front of a simulated DVS pixel array (an ON/OFF event where log intensity changed by more
  than a contrast threshold since the pixel's last event), and :func:`write_nmnist` writes a
  split of such recordings in that layout.
* DVS-Gesture as tonic distributes it preprocessed (samples cut per label, ms precision):
  ``ibmGestureTrain|ibmGestureTest/<recording>/<label>.npy``, ``N x 4`` arrays of ``x, y, p,
  t``: :func:`read_dvs_gesture`.

Every problem is a ``DataFormatError`` (``DataMissingError`` when files are absent) whose
message is one line naming what is missing and where to put it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..plasticity.data import (
    DataFormatError,
    DataMissingError,
    cifar,
    digits,
    mnist,
)

__all__ = ["DVS_GESTURE_SIZE", "NMNIST_SIZE", "DataFormatError", "DataMissingError",
           "EventSet", "Static", "load_static", "make_temporal_order", "read_dvs_gesture",
           "read_nmnist", "read_nmnist_bin", "read_shd", "saccade_events", "write_nmnist",
           "write_nmnist_bin", "write_shd"]


@dataclass
class Static:
    """Images flattened to ``n x D`` float32 in [0, 1], labels ``n``."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: int


def load_static(name: str, path: str = "") -> Static:
    """``digits`` (bundled), ``mnist``/``fashion`` (IDX files in ``path``), ``cifar10``."""
    if name == "digits":
        if importlib.util.find_spec("sklearn") is None:
            raise DataMissingError("digits needs scikit-learn (its bundled digits): "
                                   "pip install scikit-learn")
        d = digits()
    elif name in ("mnist", "fashion", "cifar10"):
        root = Path(path).expanduser()
        if not path or not root.is_dir():
            raise DataMissingError(f"data.path={path!r}: {name} needs a folder holding its "
                                   "files (IDX for mnist/fashion, cifar-10-batches-py/ for "
                                   "cifar10); see docs/spiking_nets.md")
        d = mnist(root) if name != "cifar10" else cifar(root, "cifar10")  # type: ignore[assignment]
    else:
        raise DataFormatError(f"unknown static dataset {name!r}")
    assert d is not None
    return Static(d.x_train.reshape(len(d.x_train), -1).numpy(), d.y_train.numpy(),
                  d.x_test.reshape(len(d.x_test), -1).numpy(), d.y_test.numpy(), d.classes)


@dataclass
class EventSet:
    """Event recordings: per sample ``times`` (s) and ``units``; ``labels``; ``n_units``."""

    times: list[np.ndarray]
    units: list[np.ndarray]
    labels: np.ndarray
    n_units: int
    t_max: float


def write_shd(path: str | Path, events: EventSet, speaker: np.ndarray | None = None) -> None:
    """One ``.h5`` file in SHD's layout (times float32 s, units uint16)."""
    import h5py

    with h5py.File(path, "w") as f:
        times = f.create_dataset("spikes/times", (len(events.labels),),
                                 dtype=h5py.vlen_dtype(np.float32))
        units = f.create_dataset("spikes/units", (len(events.labels),),
                                 dtype=h5py.vlen_dtype(np.uint16))
        for i, (t, u) in enumerate(zip(events.times, events.units, strict=True)):
            times[i], units[i] = t.astype(np.float32), u.astype(np.uint16)
        f["labels"] = events.labels.astype(np.uint16)
        f["extra/speaker"] = (np.zeros(len(events.labels), np.uint16) if speaker is None
                              else speaker.astype(np.uint16))
        f.attrs["n_units"], f.attrs["t_max"] = events.n_units, events.t_max


def read_shd(path: str | Path, n_units: int = 700, t_max: float | None = None) -> EventSet:
    """An SHD-layout ``.h5`` file (``n_units``/``t_max`` from its attributes when present)."""
    import h5py

    p = Path(path)
    if not p.is_file():
        raise DataMissingError(f"{p}: no such file (put shd_train.h5 and shd_test.h5 in that "
                               "folder, or run `raystudy data make-events DIR`)")
    try:
        with h5py.File(p, "r") as f:
            times = [np.asarray(t, np.float64) for t in f["spikes/times"]]
            units = [np.asarray(u, np.int64) for u in f["spikes/units"]]
            labels = np.asarray(f["labels"], np.int64)
            n_units = int(f.attrs.get("n_units", n_units))
            stored = f.attrs.get("t_max")
    except (OSError, KeyError) as exc:
        raise DataFormatError(f"{p}: not an SHD-layout .h5 file with spikes/times, "
                              f"spikes/units and labels ({exc})") from None
    if len(times) != len(labels) or len(units) != len(labels):
        raise DataFormatError(f"{p}: {len(times)} times, {len(units)} units, {len(labels)} "
                              "labels; expected one of each per sample")
    if any(len(u) and (u.max() >= n_units or u.min() < 0) for u in units):
        raise DataFormatError(f"{p}: a unit index outside 0..{n_units - 1}")
    if t_max is None:
        t_max = float(stored) if stored is not None else max(
            (float(t.max()) for t in times if len(t)), default=1.0) + 1e-6
    return EventSet(times, units, labels, n_units, float(t_max))


def make_temporal_order(n: int, classes: int = 10, n_units: int = 64, rate: float = 60.0,
                        noise: float = 2.0, t_max: float = 1.0, jitter: float = 0.05,
                        seed: int = 0) -> EventSet:
    """``n`` samples of the temporal-order task (module docstring): ``classes`` even; units
    split into ``classes`` groups; pair p's groups fire at ``rate`` Hz per unit in the first
    or second half (onsets jittered by ``jitter`` s), every unit at ``noise`` Hz throughout."""
    if classes % 2 or classes < 2 or n_units < classes:
        raise ValueError(f"classes={classes} must be even and at most n_units={n_units}")
    rng = np.random.default_rng(seed)
    groups = np.array_split(np.arange(n_units), classes)
    labels = rng.integers(0, classes, n)
    times, units = [], []
    half = t_max / 2
    for y in labels:
        p, flipped = divmod(int(y), 2)
        first, second = groups[2 * p], groups[2 * p + 1]
        if flipped:
            first, second = second, first
        ts, us = [], []
        for group, start in ((first, 0.0), (second, half)):
            onset = np.clip(start + rng.normal(0, jitter), 0, t_max - half)
            for unit in group:
                k = rng.poisson(rate * half * 0.8)
                ts.append(onset + rng.uniform(0, half * 0.8, k))
                us.append(np.full(k, unit))
        k = rng.poisson(noise * t_max * n_units)
        ts.append(rng.uniform(0, t_max, k))
        us.append(rng.integers(0, n_units, k))
        t, u = np.concatenate(ts), np.concatenate(us)
        order = np.argsort(t, kind="stable")
        times.append(t[order])
        units.append(u[order])
    return EventSet(times, units, labels, n_units, t_max)


def write_nmnist_bin(path: str | Path, x: np.ndarray, y: np.ndarray, polarity: np.ndarray,
                     t_us: np.ndarray) -> None:
    """Events in N-MNIST's 40-bit format (module docstring); ``t_us`` < 2^23."""
    t = np.asarray(t_us, np.int64)
    raw = np.stack([np.asarray(x, np.uint8), np.asarray(y, np.uint8),
                    ((np.asarray(polarity, np.int64) << 7) | (t >> 16)).astype(np.uint8),
                    ((t >> 8) & 255).astype(np.uint8), (t & 255).astype(np.uint8)], axis=1)
    Path(path).write_bytes(raw.tobytes())


def read_nmnist_bin(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x, y, polarity, t_us)`` of one N-MNIST ``.bin`` file."""
    raw = np.frombuffer(Path(path).read_bytes(), np.uint8)
    if raw.size % 5:
        raise DataFormatError(f"{path}: {raw.size} bytes, not a multiple of 5 (N-MNIST .bin)")
    b = raw.reshape(-1, 5).astype(np.int64)
    return b[:, 0], b[:, 1], b[:, 2] >> 7, ((b[:, 2] & 127) << 16) | (b[:, 3] << 8) | b[:, 4]


def read_nmnist(root: str | Path, split: str) -> EventSet:
    """``root/Train|Test/<digit>/*.bin`` as events over units ``p * 34 * 34 + y * 34 + x``."""
    folder = Path(root).expanduser() / split
    files = sorted(folder.glob("[0-9]/*.bin"))
    if not files:
        raise DataMissingError(f"{folder}: no <digit>/*.bin files (N-MNIST needs "
                               "Train/0..9/*.bin and Test/0..9/*.bin under data.path)")
    times, units, labels = [], [], []
    for f in files:
        x, y, p, t = read_nmnist_bin(f)
        times.append(t / 1e6)
        units.append(p * 34 * 34 + np.minimum(y, 33) * 34 + np.minimum(x, 33))
        labels.append(int(f.parent.name))
    t_max = max((float(t.max()) for t in times if len(t)), default=1.0) + 1e-6
    return EventSet(times, units, np.array(labels), 2 * 34 * 34, t_max)


NMNIST_SIZE = 34
"""N-MNIST's sensor crop: 34 x 34 pixels, 2 polarities."""


def saccade_events(image: np.ndarray, rng: np.random.Generator, size: int = NMNIST_SIZE,
                   amplitude: float = 3.0, steps: int = 20, contrast: float = 0.15,
                   duration_us: int = 300_000, noise: int = 20
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x, y, polarity, t_us)`` of ``image`` (``H x W`` in [0, 1], H, W <= ``size``,
    centred) moved along three saccades of ``steps`` frames each, a triangle of
    ``amplitude`` pixels as N-MNIST's (Orchard et al. 2015), over ``duration_us``: a pixel
    fires ON (polarity 1) or OFF (0) when its log intensity moved by more than ``contrast``
    since its last event; ``noise`` uniform background events; sorted by time."""
    from scipy import ndimage

    h, w = image.shape
    if h > size or w > size:
        raise ValueError(f"image {h}x{w} larger than the {size}x{size} sensor")
    canvas = np.zeros((size, size))
    top, left = (size - h) // 2, (size - w) // 2
    canvas[top:top + h, left:left + w] = image
    corners = np.array([[0.0, 0.0], [amplitude, amplitude / 2], [0.0, amplitude],
                        [0.0, 0.0]])  # (dy, dx): down-right, back-down, up: a triangle
    path = np.concatenate([np.linspace(a, b, steps, endpoint=False)
                           for a, b in zip(corners[:-1], corners[1:], strict=True)])
    path = np.concatenate([path, corners[-1:]])
    dt = duration_us / (len(path) - 1)
    ref = np.log(canvas + 0.05)
    xs, ys, ps, ts = [], [], [], []
    for k, offset in enumerate(path[1:], start=1):
        frame = np.log(ndimage.shift(canvas, offset, order=1, mode="constant") + 0.05)
        d = frame - ref
        for polarity, fired in ((1, d > contrast), (0, d < -contrast)):
            yy, xx = np.nonzero(fired)
            xs.append(xx)
            ys.append(yy)
            ps.append(np.full(len(xx), polarity))
            ts.append((k - 1) * dt + rng.uniform(0, dt, len(xx)))
            ref[fired] = frame[fired]
    xs.append(rng.integers(0, size, noise))
    ys.append(rng.integers(0, size, noise))
    ps.append(rng.integers(0, 2, noise))
    ts.append(rng.uniform(0, duration_us, noise))
    x, y, p = np.concatenate(xs), np.concatenate(ys), np.concatenate(ps)
    t = np.minimum(np.concatenate(ts).astype(np.int64), duration_us - 1)
    order = np.argsort(t, kind="stable")
    return x[order], y[order], p[order], t[order]


DVS_GESTURE_SIZE = 128
"""DVS128's sensor: 128 x 128 pixels, 2 polarities; 11 gesture classes."""
DVS_GESTURE_FOLDERS = {"train": "ibmGestureTrain", "test": "ibmGestureTest"}


def read_dvs_gesture(root: str | Path, split: str) -> EventSet:
    """DVS-Gesture as tonic's preprocessed copy lays it out: ``root/ibmGestureTrain`` (or
    ``ibmGestureTest``) ``/<user_lighting>/<label>.npy``, each an ``N x 4`` array of
    ``x, y, p, t`` with ``t`` in ms (one labelled sample per file); events over units
    ``p * 128 * 128 + y * 128 + x``."""
    folder = Path(root).expanduser() / DVS_GESTURE_FOLDERS[split]
    files = sorted(folder.glob("*/*.npy"))
    if not files:
        raise DataMissingError(f"{folder}: no <recording>/<label>.npy files (DVS-Gesture "
                               "needs tonic's ibmGestureTrain/ and ibmGestureTest/ folders, "
                               "unpacked, under data.path)")
    n, times, units, labels = DVS_GESTURE_SIZE, [], [], []
    for f in files:
        if not f.stem.isdigit() or int(f.stem) > 10:
            raise DataFormatError(f"{f}: the file name must be the label 0..10")
        try:
            ev = np.load(f)
        except (OSError, ValueError, EOFError) as exc:
            raise DataFormatError(f"{f}: not a numeric .npy array ({exc})") from None
        if ev.ndim != 2 or ev.shape[1] != 4 or not np.issubdtype(ev.dtype, np.number):
            raise DataFormatError(f"{f}: expected a numeric N x 4 array (x, y, p, t), got "
                                  f"shape {ev.shape}, dtype {ev.dtype}")
        x, y, p = (ev[:, i].astype(np.int64) for i in range(3))
        if len(ev) and (x.min() < 0 or y.min() < 0 or max(x.max(), y.max()) >= n
                        or not np.isin(p, (0, 1)).all()):
            raise DataFormatError(f"{f}: x, y outside 0..{n - 1} or a polarity not 0/1")
        times.append(ev[:, 3].astype(np.float64) / 1e3)
        units.append(p * n * n + y * n + x)
        labels.append(int(f.stem))
    t_max = max((float(t.max()) for t in times if len(t)), default=1.0) + 1e-6
    return EventSet(times, units, np.array(labels), 2 * n * n, t_max)


def write_nmnist(root: str | Path, split: str, images: np.ndarray, labels: np.ndarray,
                 seed: int = 0, **kwargs: float) -> int:
    """``root/split/<digit>/<index>.bin`` for each image moved along the saccades
    (:func:`saccade_events`; ``kwargs`` pass on); returns the number of events written."""
    rng = np.random.default_rng(seed)
    total = 0
    for i, (image, label) in enumerate(zip(images, labels, strict=True)):
        folder = Path(root) / split / str(int(label))
        folder.mkdir(parents=True, exist_ok=True)
        x, y, p, t = saccade_events(np.asarray(image, np.float64), rng, **kwargs)  # type: ignore[arg-type]
        write_nmnist_bin(folder / f"{i:05d}.bin", x, y, p, t)
        total += len(t)
    return total
