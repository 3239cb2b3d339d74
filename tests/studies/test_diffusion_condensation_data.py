"""The GADC study's readers: scikit-learn's digits with two in-study classifiers, CIFAR-10/100
python pickles written by ``pickle`` as the CIFAR archives are, and ``.npy`` feature folders
written by ``numpy.save``; each missing or malformed input is one line."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from raystudy import DataError, LocalContext, MissingDataError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.diffusion_condensation.data import (
    digits_pool,
    load_pool,
    read_cifar,
    read_features,
)
from raystudy.studies.diffusion_condensation.recipe import STUDY, CondensationConfig, train_loop

TINY = {"per_class": 3, "steps": 20, "eval_every": 20, "refine_iters": 1, "hidden": 32,
        "sample_steps": 5}


def write_cifar(root, classes: int, per_batch: int, hundred: bool = False) -> None:
    rng = np.random.default_rng(0)
    key = b"fine_labels" if hundred else b"labels"
    names = ["train", "test"] if hundred else [*(f"data_batch_{i}" for i in range(1, 6)),
                                               "test_batch"]
    for name in names:
        labels = np.arange(per_batch) % classes
        data = (rng.integers(0, 50, (per_batch, 3072)) + 40 * labels[:, None]).astype(np.uint8)
        with open(root / name, "wb") as fh:
            pickle.dump({b"data": data, key: labels.tolist()}, fh)


def test_digits_pool_selects_in_one_space_and_measures_in_another():
    pytest.importorskip("sklearn")
    pool = digits_pool(0, 40, 20)
    assert pool.classes == 10 and pool.dim == 64 and len(pool.y_train) == 400
    assert pool.select_x.shape == (400, 32) and pool.embed(pool.x_test).shape[1] == 64
    assert (pool.log_probs(pool.x_test).argmax(1) == pool.y_test).mean() > 0.8
    assert np.isfinite(pool.ce_train).all() and 0.03 < pool.tail_test.mean() < 0.07


def test_cifar_readers_both_layouts_and_one_line_errors(tmp_path):
    ten, hundred = tmp_path / "c10", tmp_path / "c100"
    ten.mkdir()
    hundred.mkdir()
    write_cifar(ten, 3, 12)
    write_cifar(hundred, 4, 40, hundred=True)
    x, y, xt, yt = read_cifar(ten)
    assert x.shape == (60, 3072) and x.dtype == np.uint8 and yt.shape == (12,)
    assert read_cifar(hundred)[1].max() == 3
    pool = load_pool("cifar", str(ten), 0, 0, 6, 15, 4)
    assert pool.dim == 6 and pool.classes == 3 and len(pool.y_train) == 45
    with pytest.raises(MissingDataError, match="data_batch_1..5.*cs.toronto.edu"):
        read_cifar(tmp_path)
    (ten / "test_batch").write_bytes(b"not a pickle")
    with pytest.raises(DataError, match="test_batch is not a CIFAR pickle"):
        read_cifar(ten)


def test_feature_folder_reader(tmp_path):
    rng = np.random.default_rng(1)
    for split, n in (("train", 60), ("test", 30)):
        y = np.arange(n) % 3
        np.save(tmp_path / f"{split}_x.npy", rng.normal(size=(n, 5)) + y[:, None])
        np.save(tmp_path / f"{split}_y.npy", y)
    assert [a.shape for a in read_features(tmp_path)] == [(60, 5), (60,), (30, 5), (30,)]
    cfg = validate(apply_overrides(CondensationConfig(), {
        **TINY, "data": "features", "data_path": str(tmp_path), "n_train": 12,
        "n_test": 10, "method": "gadc"}))
    ctx = LocalContext(STUDY.metrics)
    train_loop(cfg, ctx)
    assert 0 <= ctx.reports[-1]["eval/class_acc"] <= 1
    np.save(tmp_path / "test_y.npy", np.zeros((30, 2), dtype=np.int64))
    with pytest.raises(DataError, match=r"test_x must be \(n, d\) and test_y \(n,\)"):
        read_features(tmp_path)
    (tmp_path / "train_y.npy").unlink()
    with pytest.raises(MissingDataError, match="train_y.npy missing"):
        read_features(tmp_path)


def test_digits_trial_runs():
    pytest.importorskip("sklearn")
    cfg = validate(apply_overrides(CondensationConfig(), {
        **TINY, "data": "digits", "n_train": 20, "n_test": 10, "method": "herding"}))
    ctx = LocalContext(STUDY.metrics)
    train_loop(cfg, ctx)
    last = ctx.reports[-1]
    assert np.isfinite(last["eval/mmd2"]) and 0 <= last["eval/class_acc"] <= 1


def test_probe_is_a_fixed_random_feature_space_apart_from_the_selection():
    """Every pool measures in a fixed random-feature map of its data space: the same map
    whatever builds it, never the selection space (the mixture selects in the 8-d data)."""
    from raystudy.studies.diffusion_condensation.data import (
        PROBE_WIDTH,
        mixture_pool,
        random_features,
    )

    pool = mixture_pool(0, 4, 8, 60, 100)
    features = pool.probe(pool.x_test)
    assert features.shape == (len(pool.x_test), PROBE_WIDTH) and features.min() >= 0
    assert pool.select_x.shape[1] == 8 != PROBE_WIDTH
    again = random_features(pool.x_train)(pool.x_test)
    assert np.array_equal(features, again)
    other = random_features(pool.x_train, seed=1)(pool.x_test)
    assert not np.allclose(features, other)
    constant = np.zeros((5, 3))  # a constant feature (digits' border pixels) stays finite
    assert np.isfinite(random_features(constant)(np.ones((2, 3)))).all()
