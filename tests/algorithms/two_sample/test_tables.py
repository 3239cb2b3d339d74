"""The CSV/TSV reader against files written by Python's csv module."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from raystudy.algorithms.two_sample import Scenario, generate, read_table


def write(path, rows, delimiter=","):
    with path.open("w", newline="") as fh:
        csv.writer(fh, delimiter=delimiter).writerows(rows)
    return path


ROWS = [["sample", "Bacteroides", "group", "Firmicutes", "Other"],
        ["s1", "10", "healthy", "30", "0"],
        ["s2", "5", "ibd", "5", "10"],
        ["s3", "0", "healthy", "1", "3"],
        ["s4", "2", "ibd", "2", "0"]]


def rows_without_sample_ids():
    return [[c for i, c in enumerate(r) if i != 0] for r in ROWS]


@pytest.mark.parametrize(("suffix", "delimiter"), [(".csv", ","), (".tsv", "\t")])
def test_counts_are_closed_to_proportions_by_group(tmp_path, suffix, delimiter):
    path = write(tmp_path / f"table{suffix}", rows_without_sample_ids(), delimiter)
    table = read_table(path, "group")
    assert table.parts == ("Bacteroides", "Firmicutes", "Other")
    assert table.groups == ("healthy", "ibd")
    np.testing.assert_allclose(table.x, [[0.25, 0.75, 0.0], [0.0, 0.25, 0.75]])
    np.testing.assert_allclose(table.y, [[0.25, 0.25, 0.5], [0.5, 0.5, 0.0]])


def test_file_family_resamples_the_groups(tmp_path):
    path = write(tmp_path / "t.csv", rows_without_sample_ids())
    x, y = generate(Scenario("file", n=5, m=6, effect=1.0, path=str(path)), 3,
                    np.random.default_rng(0))
    assert x.shape == (3, 5, 3) and y.shape == (3, 6, 3)
    table = read_table(path, "group")
    assert all(any(np.allclose(r, t) for t in table.x) for r in x.reshape(-1, 3))
    assert all(any(np.allclose(r, t) for t in table.y) for r in y.reshape(-1, 3))
    _, y0 = generate(Scenario("file", n=5, m=6, effect=0.0, path=str(path)), 3,
                     np.random.default_rng(0))
    assert all(any(np.allclose(r, t) for t in table.x) for r in y0.reshape(-1, 3))


def test_missing_file_says_what_to_put_where(tmp_path):
    with pytest.raises(FileNotFoundError, match="no composition table at .*nope.csv"):
        read_table(tmp_path / "nope.csv", "group")


@pytest.mark.parametrize(("rows", "message"), [
    ([["a", "b"], ["1", "2"]], "has no column 'group'"),
    ([["group", "a", "b"], ["u", "1", "2"], ["v", "1", "1"], ["w", "3", "1"]], "has 3 groups"),
    ([["group", "a", "b"], ["u", "1", "x"], ["v", "1", "1"]], "non-numeric"),
    ([["group", "a", "b"], ["u", "0", "0"], ["v", "1", "1"]], "row of all zeros"),
    ([["group", "a", "b"], ["u", "-1", "2"], ["v", "1", "1"]], "negative"),
    ([["group", "a", "b"], ["u", "1", "2"], ["u", "1", "1"], ["v", "1", "1"]], "at least 2 rows"),
])
def test_bad_tables_raise_one_line(tmp_path, rows, message):
    path = write(tmp_path / "bad.csv", rows)
    with pytest.raises(ValueError, match=message):
        read_table(path, "group")
