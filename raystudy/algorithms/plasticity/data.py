"""Image sets for the supervised streams, read from local files (never downloaded).

* ``digits``: scikit-learn's bundled 1797 8x8 digits (offline on every machine), pixels
  / 16, a fixed split of 500 test images (seed 0) and 1297 training images.
* ``mnist``: the four IDX files of LeCun's MNIST, plain or ``.gz``, in ``path`` or its
  ``MNIST/raw/`` (torchvision's layout): ``train-images-idx3-ubyte``,
  ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``;
  images flattened to 784 values / 255.
* ``cifar10`` / ``cifar100``: the python version of CIFAR (Krizhevsky 2009), in ``path``
  or its ``cifar-10-batches-py/`` (``data_batch_1``..``5``, ``test_batch``) or
  ``cifar-100-python/`` (``train``, ``test``; fine labels); images ``3 x 32 x 32`` / 255.

Every problem with a file is a :class:`DataFormatError` whose message is one line naming
the file and what was expected.
"""

from __future__ import annotations

import gzip
import math
import pickle
import zlib
from pathlib import Path

import numpy as np
import torch

from .streams import ImageData

MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
               "t10k-labels-idx1-ubyte")
CIFAR_FILES = {"cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)],
                           ["test_batch"], b"labels", 10),
               "cifar100": ("cifar-100-python", ["train"], ["test"], b"fine_labels", 100)}
DATASETS = ("digits", "mnist", *CIFAR_FILES)


class DataFormatError(ValueError):
    """A dataset file that is missing, unreadable or not what the reader expects."""


class DataMissingError(DataFormatError):
    """The dataset's files are not there at all (they may be on another machine)."""


def digits() -> ImageData:
    """scikit-learn's digits: 1297 training and 500 test images of 64 pixels in [0, 1]."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16
    y = torch.tensor(data.target, dtype=torch.int64)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    test, train = order[:500], order[500:]
    return ImageData(x[train], y[train], x[test], y[test], 10, "digits")


def _find(root: Path, names: tuple[str, ...], subfolders: tuple[str, ...]) -> Path | None:
    """The folder (root or one of its subfolders) holding every file of ``names``."""
    for folder in (root, *(root / s for s in subfolders)):
        if all((folder / n).is_file() or (folder / f"{n}.gz").is_file() for n in names):
            return folder
    return None


def read_idx(path: Path) -> np.ndarray:
    """An IDX file of uint8 (plain or .gz): images ``n x 28 x 28`` or labels ``n``."""
    path = path if path.is_file() else path.with_name(path.name + ".gz")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            raw = handle.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise DataFormatError(f"{path}: unreadable ({exc})") from None
    magic, dims = int.from_bytes(raw[:4], "big"), raw[3] if len(raw) > 3 else 0
    if len(raw) < 8 or magic >> 8 != 0x08 or dims not in (1, 3):
        raise DataFormatError(f"{path}: not an IDX file of uint8 (magic 0x0801 or 0x0803)")
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims))
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims)
    if body.size != math.prod(shape) or (dims == 3 and shape[1:] != (28, 28)):
        raise DataFormatError(f"{path}: {body.size} bytes of data for shape {shape} "
                              "(expected n x 28 x 28 images or n labels)")
    return body.reshape(shape)


def mnist_arrays(root: Path) -> list[np.ndarray]:
    """The four MNIST arrays (train images, labels, test images, labels), checked."""
    folder = _find(root, MNIST_FILES, ("MNIST/raw", "raw"))
    if folder is None:
        raise DataMissingError(f"{root}: MNIST needs {', '.join(MNIST_FILES)} (each may end in "
                              ".gz) in that folder or its MNIST/raw/")
    arrays = [read_idx(folder / name) for name in MNIST_FILES]
    for images, labels, name in ((arrays[0], arrays[1], "train"), (arrays[2], arrays[3], "t10k")):
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels) \
                or labels.max(initial=0) > 9:
            raise DataFormatError(f"{folder}: {name} images {images.shape}, labels "
                                  f"{labels.shape} (max {labels.max(initial=0)}); expected "
                                  "n x 28 x 28 and n labels in 0-9")
    return arrays


def mnist(root: Path) -> ImageData:
    arrays = mnist_arrays(root)
    x = [torch.from_numpy(a.reshape(len(a), -1).astype(np.float32) / 255) for a in arrays[::2]]
    y = [torch.from_numpy(a.astype(np.int64)) for a in arrays[1::2]]
    return ImageData(x[0], y[0], x[1], y[1], 10, "mnist")


def cifar_batch(path: Path, label_key: bytes, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR python pickle: uint8 images ``n x 3 x 32 x 32`` and int64 labels."""
    try:
        with open(path, "rb") as handle:
            batch = pickle.load(handle, encoding="bytes")
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError) as exc:
        raise DataFormatError(f"{path}: not a CIFAR python pickle ({exc})") from None
    if not isinstance(batch, dict):
        raise DataFormatError(f"{path}: not a CIFAR python pickle (no dict inside)")
    data, labels = batch.get(b"data"), np.asarray(batch.get(label_key, []))
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 \
            or data.shape[1] != 3072 or len(labels) != len(data) or labels.max() >= classes:
        raise DataFormatError(f"{path}: expected b'data' uint8 n x 3072 and {label_key!r} "
                              f"with n labels in 0..{classes - 1}")
    return data.reshape(-1, 3, 32, 32), labels.astype(np.int64)


def cifar(root: Path, name: str, only_check: bool = False) -> ImageData | None:
    """CIFAR-10 or -100 (``name``); ``only_check`` reads one training and the test batch."""
    sub, train_files, test_files, label_key, classes = CIFAR_FILES[name]
    folder = _find(root, tuple(train_files + test_files), (sub,))
    if folder is None:
        raise DataMissingError(f"{root}: {name} needs {sub}/ with "
                              f"{', '.join(train_files + test_files)} (the python version)")
    if only_check:
        for file in (train_files[0], test_files[0]):
            cifar_batch(folder / file, label_key, classes)
        return None
    parts = [[cifar_batch(folder / f, label_key, classes) for f in files]
             for files in (train_files, test_files)]
    x = [torch.from_numpy(np.concatenate([p[0] for p in ps]).astype(np.float32) / 255)
         for ps in parts]
    y = [torch.from_numpy(np.concatenate([p[1] for p in ps])) for ps in parts]
    return ImageData(x[0], y[0], x[1], y[1], classes, name)


def _root(dataset: str, path: str) -> Path:
    if dataset not in DATASETS:
        raise DataFormatError(f"unknown dataset {dataset!r}; choose {', '.join(DATASETS)}")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise DataMissingError(f"stream.path={path}: no such folder (it should hold the "
                              f"{dataset} files; see docs/plasticity.md)")
    return root


def load_image_data(dataset: str, path: str = "") -> ImageData:
    """``digits`` (no path) or the files of ``mnist``/``cifar10``/``cifar100`` under ``path``."""
    if dataset == "digits":
        return digits()
    root = _root(dataset, path)
    return mnist(root) if dataset == "mnist" else cifar(root, dataset)


def check_image_data(dataset: str, path: str = "") -> None:
    """Open the files ``load_image_data`` would read and check format, shapes and labels."""
    if dataset == "digits":
        return
    root = _root(dataset, path)
    if dataset == "mnist":
        mnist_arrays(root)
    else:
        cifar(root, dataset, only_check=True)
