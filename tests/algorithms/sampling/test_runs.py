"""Coalescing sorted rows into runs and spans."""

import numpy as np

from raystudy.algorithms.sampling.runs import concat_ranges, merge_runs, read_spans, runs


def test_runs_with_repeats():
    starts, stops = runs(np.array([1, 2, 2, 3, 7, 8, 10]))
    assert starts.tolist() == [1, 7, 10]
    assert stops.tolist() == [4, 9, 11]
    assert [a.size for a in runs(np.array([], np.int64))] == [0, 0]


def test_merge_runs_by_gap():
    starts, stops = np.array([0, 5, 20]), np.array([2, 8, 21])
    gaps = starts[1:] - stops[:-1]
    assert [a.tolist() for a in merge_runs(starts, stops, gaps, 3)] == [[0, 20], [8, 21]]
    assert [a.tolist() for a in merge_runs(starts, stops, gaps, 100)] == [[0], [21]]
    assert [a.tolist() for a in merge_runs(starts, stops, gaps, 0)] == [[0, 5, 20], [2, 8, 21]]


def test_read_spans_row_by_row():
    starts, stops = read_spans(np.array([4, 4, 5, 9]), False, None, 0)
    assert starts.tolist() == [4, 5, 9] and stops.tolist() == [5, 6, 10]


def test_concat_ranges():
    assert concat_ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist() == [5, 6, 9, 10, 11]
    assert concat_ranges(np.array([], np.int64), np.array([], np.int64)).size == 0
