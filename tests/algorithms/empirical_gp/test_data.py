"""Corpus generators, local-file loaders (files written by json/pandas) and baselines."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from raystudy.algorithms.empirical_gp.baselines import BASELINES, fit_and_predict
from raystudy.algorithms.empirical_gp.corpora import (
    CorpusSpec,
    CurveFamily,
    GPFamily,
    SeasonalFamily,
    corpus,
    matern52,
    tasks,
)
from raystudy.algorithms.empirical_gp.loaders import (
    holdout_split,
    lcbench_json_table,
    load_csv_folder,
    load_curves,
    load_lcbench_json,
    load_lcbench_parquet,
)
from raystudy.errors import DataError


def test_learning_curves_are_bounded_and_mostly_increasing():
    grid = np.linspace(0, 1, 52)
    Y, F = tasks(CurveFamily(), grid, 300, noise_sd=0.01, seed=0)
    assert Y.shape == F.shape == (300, 52)
    assert F.min() > 0.0 and F.max() < 1.0
    assert (np.diff(F, axis=1) >= -1e-12).all()  # every family is non-decreasing
    assert np.std(Y - F) == pytest.approx(0.01, rel=0.05)


def test_seasonal_series_have_their_period():
    grid = np.linspace(0, 1, 96)
    _, F = tasks(SeasonalFamily(), grid, 200, noise_sd=0.0, seed=1)
    detrended = F - np.polyval(np.polyfit(grid, F.T, 1), grid[:, None]).T
    power = np.abs(np.fft.rfft(detrended, axis=1)) ** 2
    peaks = power[:, 1:].argmax(1) + 1  # frequency bins: 96 / 24 = 4 or 96 / 12 = 8
    assert np.isin(peaks, [4, 8]).mean() > 0.8


def test_gp_family_moments_and_corpus_locations():
    z = np.linspace(0, 1, 5)
    mean, cov = GPFamily(lengthscale=0.2).moments(z)
    np.testing.assert_allclose(mean, 0.5 * np.sin(3 * z))
    np.testing.assert_allclose(cov, matern52(z, z, 0.2))
    F = np.stack(GPFamily(lengthscale=0.2).draw(np.random.default_rng(0), [z] * 4000))
    np.testing.assert_allclose(np.cov(F.T), cov, atol=0.08)
    spec = CorpusSpec(locations="prefix", min_points=5, max_points=52, noise_sd=0.01)
    data = corpus(CurveFamily(), spec, 50, seed=2)
    for x, y in data:
        assert 5 <= len(y) <= 52 and x.shape == (len(y), 1)
        np.testing.assert_allclose(x[:, 0], spec.grid[: len(y)])
    uniform = corpus(GPFamily(), CorpusSpec(locations="uniform", min_points=10, max_points=30),
                     20, seed=3)
    assert all(10 <= len(y) <= 30 and 0 <= float(x.min()) and float(x.max()) <= 1
               for x, y in uniform)


def lcbench_json(tmp_path, epochs=52):
    rng = np.random.default_rng(0)
    data = {name: {str(c): {"log": {"Train/val_accuracy": list(rng.uniform(0, 100, epochs)),
                                    "time": list(range(epochs))}, "config": {}}
                   for c in range(3)} for name in ("adult", "car")}
    path = tmp_path / "data_2k.json"
    path.write_text(json.dumps(data))
    return path, data


def test_lcbench_json(tmp_path):
    path, data = lcbench_json(tmp_path)
    curves = load_curves(path)
    assert set(curves) == {"adult", "car"} and curves["adult"].shape == (3, 52)
    np.testing.assert_allclose(curves["car"][1], data["car"]["1"]["log"]["Train/val_accuracy"])
    del data["car"]["2"]["log"]["Train/val_accuracy"]
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"data_2k.json: data\['car'\]\['2'\] has no "
                                        r"\['log'\]\['Train/val_accuracy'\]"):
        load_lcbench_json(path)
    path.write_text("{not json")
    with pytest.raises(DataError, match="data_2k.json: not valid JSON"):
        load_lcbench_json(path)
    with pytest.raises(DataError, match="no such file"):
        load_lcbench_json(tmp_path / "missing.json")


def lcbench_configs(tmp_path, datasets=4, configs=10, epochs=6):
    """LCBench's layout with the same config ids on every dataset, every curve distinct."""
    rng = np.random.default_rng(3)
    data = {f"d{j}": {str(c): {"config": {"lr": 10.0 ** -c}, "log": {
        "Train/val_accuracy": list(rng.uniform(0, 100, epochs))}} for c in range(configs)}
        for j in range(datasets)}
    path = tmp_path / "data_2k.json"
    path.write_text(json.dumps(data))
    return path, data


@pytest.mark.parametrize("test_datasets", [0, 2])
def test_holdout_split_keeps_test_configurations_and_datasets_out_of_the_pool(tmp_path,
                                                                             test_datasets):
    path, data = lcbench_configs(tmp_path)
    table = lcbench_json_table(path)
    split = holdout_split(table, 5, test_datasets, np.random.default_rng(0))
    test_configs = {c for _, c in split.test_keys}
    assert split.test.shape == (5, 6) and len(test_configs) == 5  # one curve per configuration
    assert not test_configs & {c for _, c in split.pool_keys}
    # the pool is every curve of the other configurations (on the corpus datasets)
    corpus_datasets = 4 - test_datasets
    assert len(split.pool) == corpus_datasets * (10 - 5)
    if test_datasets:
        assert not {d for d, _ in split.test_keys} & {d for d, _ in split.pool_keys}
        assert len({d for d, _ in split.pool_keys}) == corpus_datasets
    # by value, against the file itself: no test curve is in the pool
    for (d, c), row in zip(split.test_keys, split.test, strict=True):
        np.testing.assert_array_equal(row, data[d][c]["log"]["Train/val_accuracy"])
        assert not (split.pool == row).all(1).any()
    with pytest.raises(DataError, match="only 10 distinct configurations on the test datasets"):
        holdout_split(table, 11, 0, np.random.default_rng(0))
    with pytest.raises(DataError, match="4 test datasets asked for, the files have 4"):
        holdout_split(table, 3, 4, np.random.default_rng(0))


def test_lcbench_lite_parquet(tmp_path):
    rng = np.random.default_rng(1)
    values = rng.uniform(0, 100, (4, 52))
    index = pd.MultiIndex.from_product([range(4), range(52)], names=["trial", "epoch"])
    frame = pd.DataFrame({"Train/val_accuracy": values.ravel(), "time": 1.0}, index=index)
    (tmp_path / "Fashion-MNIST").mkdir()
    frame.to_parquet(tmp_path / "Fashion-MNIST" / "metrics.parquet.gzip", engine="pyarrow",
                     compression="gzip")
    curves = load_curves(tmp_path)
    assert list(curves) == ["Fashion-MNIST"]
    np.testing.assert_allclose(curves["Fashion-MNIST"], values)
    frame.drop(columns="Train/val_accuracy").to_parquet(tmp_path / "Fashion-MNIST" /
                                                        "metrics.parquet.gzip")
    with pytest.raises(DataError, match=r"metrics.parquet.gzip: no 'Train/val_accuracy'"):
        load_lcbench_parquet(tmp_path)
    (tmp_path / "Fashion-MNIST" / "metrics.parquet.gzip").write_bytes(b"garbage")
    with pytest.raises(DataError, match="unreadable as parquet"):
        load_lcbench_parquet(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="empty: no metrics"):
        load_lcbench_parquet(tmp_path / "empty")


def test_csv_folder(tmp_path):
    pd.DataFrame({"time": range(10), "value": np.arange(10) * 0.5}).to_csv(
        tmp_path / "a.csv", index=False)
    (tmp_path / "b.csv").write_text("\n".join(str(v) for v in range(7)) + "\n")
    series = load_curves(tmp_path)
    np.testing.assert_allclose(series["a"], [np.arange(10) * 0.5])
    np.testing.assert_allclose(series["b"], [np.arange(7)])
    pd.DataFrame({"x": [1, 2], "y": [3, 4]}).to_csv(tmp_path / "c.csv", index=False)
    with pytest.raises(DataError, match=r"c.csv: expected a 'value' column or a single column"):
        load_csv_folder(tmp_path)
    (tmp_path / "c.csv").write_text("value\n1\nabc\n3\n")
    with pytest.raises(DataError, match=r"c.csv: column 'value': has NaN or inf values"):
        load_csv_folder(tmp_path)
    with pytest.raises(DataError, match="no such folder"):
        load_csv_folder(tmp_path / "nope")


@pytest.mark.parametrize("kind", BASELINES)
def test_baselines_fit_a_smooth_function(kind):
    x = torch.linspace(0, 1, 25, dtype=torch.float64).unsqueeze(-1)
    y = 3.0 + torch.sin(6 * x[:, 0]) + 0.05 * torch.randn(
        25, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x_new = torch.tensor([[0.31], [0.52]], dtype=torch.float64)
    mean, var = fit_and_predict(kind, x, y, x_new, steps=150)
    np.testing.assert_allclose(mean, 3.0 + torch.sin(6 * x_new[:, 0]), atol=0.15)
    assert bool((var > 0).all()) and float(var.max()) < 0.1
    with pytest.raises(ValueError, match="baseline 'cubic' is not one of"):
        fit_and_predict("cubic", x, y, x_new)
