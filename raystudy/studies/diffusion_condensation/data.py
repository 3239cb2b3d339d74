"""The study's data, each as a ``Pool`` (what a trial selects from, trains on and measures):

* ``mixture``: class-conditional 8-d Gaussian mixtures with a 5 % wide tail per class
  (known densities, so the Bayes classifier, the rarity and the tail are exact);
* ``digits``: scikit-learn's bundled 8x8 digits (64-d, scaled to [-1, 1]); the selection
  runs in the hidden features of one small classifier trained here and the metrics in those
  of a second one (another width and seed), so the metric's space is not the one selected
  in (research note §8);
* ``cifar``: CIFAR-10/100 python pickles from ``data_path``, on the pool's first ``dim``
  principal axes (raystudy's reading: a 2-CPU denoiser cannot train on 3072-d pixels);
* ``features``: precomputed feature arrays from ``data_path`` (``train_x.npy``,
  ``train_y.npy``, ``test_x.npy``, ``test_y.npy``; an ImageNet encoder's, say), trained on
  as they are.

Outside the mixture, the rarity of a point is its distance to the 5th nearest point of its
class (a k-NN density reading) and the tail is the held-out 5 % with the largest such
distance in the metric's space.

Every pool also has a **probe**: a fixed random-feature map of the data space
(:func:`random_features`), seeded apart from every data, selection and model seed. No
selection runs in it, on any data, so the claims' sample metrics (``eval/*_rf``) are read
there; on the mixture the pool's own metric space is the data space, which is also the one
selected in (GADC's moment term matches its mean and variances).
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from raystudy import DataError, MissingDataError
from raystudy.algorithms.condensation import Denoiser, GaussianDiffusion, knn_radii, model_eps_fn
from raystudy.studies.diffusion_condensation.config import CondensationConfig


@dataclass
class Pool:
    x_train: np.ndarray  # (N, d) the data space: what the diffusion model trains on
    y_train: np.ndarray  # (N,)
    x_test: np.ndarray  # (M, d) held out: the metrics' reference
    y_test: np.ndarray
    select_x: np.ndarray  # (N, d_s) where the selection runs
    ce_train: np.ndarray  # (N,) the selection classifier's cross-entropy on the true class
    rarity_train: np.ndarray  # (N,) larger = rarer (D2C-style difficulty, the tail share)
    tail_test: np.ndarray  # (M,) bool: the held-out low-density tail
    e_test: np.ndarray  # (M, d_e) the held-out data in the metrics' feature space
    embed: Callable[[np.ndarray], np.ndarray]  # data space -> the metrics' feature space
    log_probs: Callable[[np.ndarray], np.ndarray]  # data space -> (n, C) evaluation classifier
    probe: Callable[[np.ndarray], np.ndarray]  # data space -> the random-feature space

    @property
    def classes(self) -> int:
        return int(self.y_train.max()) + 1

    @property
    def dim(self) -> int:
        return int(self.x_train.shape[1])


# ----------------------------------------------------------------------------- probe
PROBE_WIDTH = 32
"""Random ReLU features of the probe space: a nonlinear lift of the data space wide enough
that its means and covariances are not the data space's (the moment term matches those),
narrow enough for a Frechet distance on 2,000 samples."""
PROBE_SEED = 7919
"""Seed of the probe's weights: one fixed map for every data seed, method and selection, so
all of them are measured in the same space, which none of them saw."""


def random_features(x_train: np.ndarray, width: int = PROBE_WIDTH,
                    seed: int = PROBE_SEED) -> Callable[[np.ndarray], np.ndarray]:
    """``x -> relu(z W + b)``: the data space standardised on the pool (``z``), then fixed
    Gaussian weights ``W`` (variance 1 / d) and biases ``b`` (variance 1)."""
    rng = np.random.default_rng(seed)
    dim = x_train.shape[1]
    weights = rng.normal(0.0, 1.0 / np.sqrt(dim), (dim, width))
    bias = rng.normal(0.0, 1.0, width)
    centre, spread = x_train.mean(0), x_train.std(0)
    spread = np.where(spread > 1e-6, spread, 1.0)  # constant pixels (digits' borders)

    def probe(x: np.ndarray) -> np.ndarray:
        return np.maximum(((np.asarray(x, np.float64) - centre) / spread) @ weights + bias,
                          0.0)
    return probe


# ----------------------------------------------------------------------------- mixture
@dataclass
class Mixture:
    x_train: np.ndarray  # (C n_train, d)
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    tail_test: np.ndarray  # (C n_test,) bool: drawn from the wide tail
    means: np.ndarray  # (C, 3, d) mode centres
    scales: np.ndarray  # (C, 3, d) mode standard deviations
WEIGHTS = np.array([0.55, 0.30, 0.10, 0.05])  # three modes and the 5 % tail N(centre, 9 I)


@functools.lru_cache(maxsize=4)
def mixture(seed: int, classes: int, dim: int, n_train: int, n_test: int) -> Mixture:
    """Class-conditional Gaussian mixtures with known densities (research note §8)."""
    rng = np.random.default_rng(1000 + seed)
    means = rng.normal(0, 3.0, size=(classes, 3, dim))
    scales = rng.uniform(0.3, 1.0, size=(classes, 3, dim))

    def draw(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        xs, ys, tails = [], [], []
        for c in range(classes):
            comp = rng.choice(4, n, p=WEIGHTS)
            centre = means[c].mean(0)
            x = np.where((comp == 3)[:, None], centre + 3.0 * rng.normal(size=(n, dim)),
                         means[c][np.minimum(comp, 2)] + scales[c][np.minimum(comp, 2)]
                         * rng.normal(size=(n, dim)))
            xs.append(x)
            ys.append(np.full(n, c))
            tails.append(comp == 3)
        return np.concatenate(xs), np.concatenate(ys), np.concatenate(tails)
    xtr, ytr, _ = draw(n_train)
    xte, yte, tte = draw(n_test)
    return Mixture(xtr, ytr, xte, yte, tte, means, scales)


def log_density(m: Mixture, x: np.ndarray) -> np.ndarray:
    """log p(x | c) ``(n, C)`` of the known mixture."""
    out = []
    d = x.shape[1]
    for c in range(len(m.means)):
        parts = []
        for k in range(3):
            s = m.scales[c, k]
            parts.append(np.log(WEIGHTS[k]) - 0.5 * (((x - m.means[c, k]) / s) ** 2).sum(1)
                         - np.log(s).sum() - 0.5 * d * np.log(2 * np.pi))
        z = x - m.means[c].mean(0)
        parts.append(np.log(WEIGHTS[3]) - 0.5 * (z ** 2).sum(1) / 9 - d * np.log(3.0)
                     - 0.5 * d * np.log(2 * np.pi))
        out.append(np.logaddexp.reduce(np.stack(parts), axis=0))
    return np.stack(out, 1)


def bayes_log_probs(m: Mixture, x: np.ndarray) -> np.ndarray:
    """log p(c | x) ``(n, C)`` under equal class priors: the Bayes classifier."""
    lp = log_density(m, x)
    return lp - np.logaddexp.reduce(lp, axis=1, keepdims=True)


def mixture_pool(seed: int, classes: int, dim: int, n_train: int, n_test: int) -> Pool:
    m = mixture(seed, classes, dim, n_train, n_test)
    rows = np.arange(len(m.y_train))
    return Pool(m.x_train, m.y_train, m.x_test, m.y_test, m.x_train,
                -bayes_log_probs(m, m.x_train)[rows, m.y_train],
                -log_density(m, m.x_train)[rows, m.y_train], m.tail_test, m.x_test,
                embed=lambda x: x, log_probs=lambda x: bayes_log_probs(m, x),
                probe=random_features(m.x_train))


# ----------------------------------------------------------------------------- real data
class Classifier(torch.nn.Module):
    """A one-hidden-layer MLP; its ReLU features are a space to select or measure in."""

    def __init__(self, dim: int, classes: int, hidden: int):
        super().__init__()
        self.hidden = torch.nn.Sequential(torch.nn.Linear(dim, hidden), torch.nn.ReLU())
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.hidden(x))


def train_classifier(x: np.ndarray, y: np.ndarray, hidden: int, seed: int,
                     epochs: int = 300) -> Classifier:
    """Full-batch Adam on the pool with weight decay (a small model trained in the study)."""
    torch.manual_seed(seed)
    net = Classifier(x.shape[1], int(y.max()) + 1, hidden)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, weight_decay=1e-3)
    xt, yt = torch.tensor(x, dtype=torch.float32), torch.tensor(y)
    for _ in range(epochs):
        loss = torch.nn.functional.cross_entropy(net(xt), yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net.eval()


def labelled_pool(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray,
                  y_test: np.ndarray, seed: int) -> Pool:
    """A Pool of real data: two classifiers trained here, A (32 hidden, seed) for the
    selection's features and CE, B (64 hidden, seed + 1000) for the metrics."""
    a = train_classifier(x_train, y_train, 32, seed)
    b = train_classifier(x_train, y_train, 64, seed + 1000)

    def features(net: Classifier, x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return net.hidden(torch.tensor(x, dtype=torch.float32)).double().numpy()

    def log_probs(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return torch.log_softmax(b(torch.tensor(x, dtype=torch.float32)), 1).double().numpy()

    with torch.no_grad():
        logits = a(torch.tensor(x_train, dtype=torch.float32))
        ce = torch.nn.functional.cross_entropy(logits, torch.tensor(y_train),
                                               reduction="none").double().numpy()
    select_x = features(a, x_train)
    rarity = np.zeros(len(y_train))
    for c in np.unique(y_train):
        idx = np.flatnonzero(y_train == c)
        rarity[idx] = knn_radii(select_x[idx], 5)
    embedded = features(b, x_test)
    spread = knn_radii(embedded, 5)
    tail = spread > np.quantile(spread, 0.95)
    return Pool(x_train, y_train, x_test, y_test, select_x, ce, rarity, tail, embedded,
                embed=lambda x: features(b, x), log_probs=log_probs,
                probe=random_features(x_train))


def split_per_class(x: np.ndarray, y: np.ndarray, n_train: int, n_test: int, seed: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per class, n_train for the pool and up to n_test of the rest for the reference."""
    rng = np.random.default_rng(1000 + seed)
    tr, te = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        if len(idx) <= n_train:
            raise DataError(f"class {c} has {len(idx)} points; n_train={n_train} leaves none "
                            "held out")
        tr.append(idx[:n_train])
        te.append(idx[n_train:n_train + n_test])
    a, b = np.concatenate(tr), np.concatenate(te)
    return x[a], y[a], x[b], y[b]


def digits_pool(seed: int, n_train: int, n_test: int) -> Pool:
    from sklearn.datasets import load_digits  # the config checks it is installed

    bunch = load_digits()
    x = bunch.data / 8.0 - 1.0
    return labelled_pool(*split_per_class(x, bunch.target, n_train, n_test, seed), seed)


CIFAR10 = ("data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5")


def cifar_layout(root: Path) -> tuple[list[str], list[str], bytes]:
    """The pickles of a CIFAR-10 or CIFAR-100 folder (train files, test files, label key)."""
    if all((root / f).is_file() for f in CIFAR10) and (root / "test_batch").is_file():
        return list(CIFAR10), ["test_batch"], b"labels"
    if (root / "train").is_file() and (root / "test").is_file():
        return ["train"], ["test"], b"fine_labels"
    raise MissingDataError(
        f"data=cifar: no CIFAR-10 (data_batch_1..5, test_batch) or CIFAR-100 (train, test) "
        f"python pickles in {root}; extract cifar-10-python.tar.gz or cifar-100-python.tar.gz "
        "from https://www.cs.toronto.edu/~kriz/cifar.html there")


def read_cifar(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """CIFAR-10 (data_batch_1..5, test_batch) or CIFAR-100 (train, test) python pickles:
    pixels ``(n, 3072)`` uint8 and labels."""
    root = Path(path)
    train, test, key = cifar_layout(root)

    def load(names: list[str]) -> tuple[np.ndarray, np.ndarray]:
        xs, ys = [], []
        for name in names:
            try:
                with open(root / name, "rb") as fh:
                    batch = pickle.load(fh, encoding="bytes")
                xs.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3072))
                ys.append(np.asarray(batch[key], dtype=np.int64))
            except (OSError, pickle.UnpicklingError, KeyError, ValueError, EOFError) as exc:
                raise DataError(f"data=cifar: {root / name} is not a CIFAR pickle with "
                                f"{b'data'!r} (n, 3072) and {key!r}: {exc}") from None
        return np.concatenate(xs), np.concatenate(ys)

    return (*load(train), *load(test))


def cifar_pool(path: str, seed: int, dim: int, n_train: int, n_test: int) -> Pool:
    """CIFAR on the pool's first ``dim`` principal axes, scaled to unit mean variance."""
    x_tr, y_tr, x_te, y_te = read_cifar(path)
    xa, ya, _, _ = split_per_class(x_tr.astype(np.float64) / 127.5 - 1.0, y_tr, n_train, 0,
                                   seed)
    _, _, xb, yb = split_per_class(x_te.astype(np.float64) / 127.5 - 1.0, y_te, 0, n_test,
                                   seed)
    centre = xa.mean(0)
    axes = np.linalg.svd(xa - centre, full_matrices=False)[2][:dim].T
    za, zb = (xa - centre) @ axes, (xb - centre) @ axes
    scale = float(np.sqrt(za.var(0).mean()))
    return labelled_pool(za / scale, ya, zb / scale, yb, seed)


FEATURE_FILES = ("train_x.npy", "train_y.npy", "test_x.npy", "test_y.npy")


def read_features(path: str | Path, mmap: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The four arrays of a features folder, checked: 2-d float features, 1-d int labels
    (``mmap``: memory-mapped, as read, for a check)."""
    root = Path(path)
    missing = [f for f in FEATURE_FILES if not (root / f).is_file()]
    if missing:
        raise MissingDataError(f"data=features: {', '.join(missing)} missing in {root}; "
                               "write (n, d) float features and (n,) integer labels there "
                               "with numpy.save")
    arrays = []
    for name in FEATURE_FILES:
        try:
            arrays.append(np.load(root / name, allow_pickle=False,
                                  mmap_mode="r" if mmap else None))
        except (OSError, ValueError) as exc:
            raise DataError(f"data=features: {root / name} is not a .npy array: {exc}") from None
    x_tr, y_tr, x_te, y_te = arrays
    for x, y, split in ((x_tr, y_tr, "train"), (x_te, y_te, "test")):
        if x.ndim != 2 or y.ndim != 1 or len(x) != len(y):
            raise DataError(f"data=features: {split}_x must be (n, d) and {split}_y (n,); got "
                            f"{x.shape} and {y.shape} in {root}")
        if not np.issubdtype(y.dtype, np.integer) or (len(y) and y.min() < 0):
            raise DataError(f"data=features: {split}_y must hold class indices >= 0 (got "
                            f"{y.dtype}) in {root}")
    if x_tr.shape[1] != x_te.shape[1]:
        raise DataError(f"data=features: train_x has {x_tr.shape[1]} features, test_x "
                        f"{x_te.shape[1]}, in {root}")
    if mmap:
        return x_tr, y_tr, x_te, y_te
    return x_tr.astype(np.float64), y_tr.astype(np.int64), x_te.astype(np.float64), \
        y_te.astype(np.int64)


def features_pool(path: str, seed: int, n_train: int, n_test: int) -> Pool:
    x_tr, y_tr, x_te, y_te = read_features(path)
    xa, ya, _, _ = split_per_class(x_tr, y_tr, n_train, 0, seed)
    _, _, xb, yb = split_per_class(x_te, y_te, 0, n_test, seed)
    return labelled_pool(xa, ya, xb, yb, seed)


@functools.lru_cache(maxsize=4)
def load_pool(data: str, path: str, seed: int, classes: int, dim: int, n_train: int,
              n_test: int) -> Pool:
    """The pool a trial uses (cached per process: every method of a seed shares it)."""
    if data == "mixture":
        return mixture_pool(seed, classes, dim, n_train, n_test)
    if data == "digits":
        return digits_pool(seed, n_train, n_test)
    if data == "cifar":
        return cifar_pool(path, seed, dim, n_train, n_test)
    return features_pool(path, seed, n_train, n_test)


def check_source(data: str, path: str) -> None:
    """On the driver, before Ray starts: the files a trial will read are there and sound
    (features: the arrays' shapes and dtypes, memory-mapped; cifar: the pickles' names)."""
    if data == "features":
        read_features(path, mmap=True)
    elif data == "cifar":
        cifar_layout(Path(path))


def pool_of(c: CondensationConfig) -> Pool:
    return load_pool(c.data, c.data_path, c.seed, c.classes, c.dim, c.n_train, c.n_test)


def generate(model: Denoiser, diff: GaussianDiffusion, c: CondensationConfig, pool: Pool
             ) -> tuple[np.ndarray, np.ndarray]:
    """500 DDIM samples per class ``(500 C, d)`` and their labels; every method of a seed
    starts from the same noise."""
    model.eval()
    y = torch.arange(pool.classes).repeat_interleave(500)
    x = diff.sample(model_eps_fn(model), y, pool.dim, torch.Generator().manual_seed(c.seed + 7),
                    steps=c.sample_steps, method="ddim", guidance=c.guidance,
                    null_label=pool.classes)
    model.train()
    return x.double().numpy(), y.numpy()
