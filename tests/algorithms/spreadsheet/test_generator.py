"""Generated sheets and trajectories: determinism, the sheet's structure worked out by hand,
every profile reaching the same sheet, and monotone trajectories (hypothesis)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raystudy.algorithms.spreadsheet import (
    KINDS,
    PROFILES,
    Action,
    SheetState,
    apply_actions,
    generate_trajectory,
    is_monotone,
    parse_action,
)
from raystudy.errors import ConfigError


def test_deterministic_per_seed_and_profile():
    assert generate_trajectory(3, "column_major") == generate_trajectory(3, "column_major")
    assert generate_trajectory(3) != generate_trajectory(4)
    assert generate_trajectory(3, "row_major") != generate_trajectory(3, "column_major")


def test_every_profile_makes_the_same_sheet_in_its_own_order():
    for seed in range(5):
        runs = {p: generate_trajectory(seed, p, n_rows=5, n_cols=4) for p in PROFILES}
        targets = [apply_actions(t) for t in runs.values()]
        assert all(t == targets[0] for t in targets)
        assert len({tuple(t) for t in runs.values()}) == len(PROFILES)
    assert len(runs["format_as_you_go"]) > len(runs["row_major"])   # per-cell formats


def _column_kind(state: SheetState, col: str) -> str:
    fmt = state.props(f"{col}3")["number_format"]
    return {"000": "id", "#,##0": "int", "#,##0.00": "float", "0.0%": "percent"}[fmt]


@pytest.mark.parametrize("seed", range(6))
def test_the_generated_sheet_has_the_documented_structure(seed):
    n_rows, n_cols = 4, 4
    state = apply_actions(generate_trajectory(seed, "row_major", n_rows=n_rows, n_cols=n_cols))
    assert state.merged == frozenset({"A1:D1"})
    title = state.props("A1")
    assert title["value"].endswith(" report") and title["bold"] and title["align"] == "center"
    headers = [state.props(f"{c}2") for c in "ABCD"]
    assert all(h["bold"] and h["fill"] and h["font_color"] == "#FFFFFF" and h["border"]
               and h["align"] == "center" and isinstance(h["value"], str) for h in headers)
    assert len({h["value"] for h in headers}) == 4
    for r in range(3, 7):                                        # labels, in italics
        label = state.props(f"A{r}")
        assert isinstance(label["value"], str) and label["italic"]
    total = state.props("A7")
    assert total["value"] == "Total" and total["bold"] and not total["italic"]
    for col in "BCD":
        kind = _column_kind(state, col)
        values = [state.props(f"{col}{r}")["value"] for r in range(3, 7)]
        assert all(isinstance(v, (int, float)) for v in values)
        foot = state.props(f"{col}7")
        assert foot["bold"] and foot["border"] == state.props("A7")["border"]
        if kind == "id":
            steps = {b - a for a, b in zip(values, values[1:], strict=False)}
            assert col == "B" and len(steps) == 1
            assert foot["value"] is None and foot["number_format"] == "General"
        else:
            fn = "AVERAGE" if kind == "percent" else "SUM"
            assert foot["value"] == f"={fn}({col}3:{col}6)"
            assert foot["number_format"] == state.props(f"{col}3")["number_format"]
            if kind == "int":
                assert all(isinstance(v, int) for v in values)
            if kind == "percent":
                assert all(0 < v < 1 for v in values)
    assert state.props("E2") == SheetState().props("E2")         # nothing outside the table


def test_profile_orders_without_noise():
    row = generate_trajectory(1, "row_major", n_rows=3, n_cols=3, noise=0)
    assert [a.kind for a in row[:5]] == ["INPUT", "MERGE", "FONT_BOLD", "FONT_COLOR", "ALIGN"]
    assert [a.target for a in row[5:8]] == ["A2", "B2", "C2"]
    assert [a.target for a in row[13:16]] == ["A3", "B3", "C3"]         # across the row
    col = generate_trajectory(1, "column_major", n_rows=3, n_cols=3, noise=0)
    assert [a.target for a in col[13:17]] == ["A3", "A4", "A5", "A6"]   # down the column
    assert col[17] == Action("FONT_ITALIC", "A3:A5", True)
    data_first = generate_trajectory(1, "data_then_format", n_rows=3, n_cols=3, noise=0)
    kinds = [a.kind for a in data_first]
    assert kinds.index("MERGE") == kinds.count("INPUT")                  # all inputs first
    as_you_go = generate_trajectory(1, "format_as_you_go", n_rows=3, n_cols=3, noise=0)
    assert as_you_go[14] == Action("FONT_ITALIC", "A3", True) and as_you_go[13].target == "A3"


def test_noise_reorders_disjoint_neighbours_only():
    clean = generate_trajectory(2, "row_major", noise=0)
    noisy = generate_trajectory(2, "row_major", noise=0.3)
    assert noisy != clean and Counter(noisy) == Counter(clean)
    assert apply_actions(noisy) == apply_actions(clean)
    kinds = Counter(a.kind for p in PROFILES for a in generate_trajectory(0, p))
    assert set(kinds) == set(KINDS)                                      # all 9 kinds used


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 10**6), profile=st.sampled_from(PROFILES),
       n_rows=st.integers(1, 6), n_cols=st.integers(2, 6), noise=st.floats(0, 0.5))
def test_generated_trajectories_are_monotone(seed, profile, n_rows, n_cols, noise):
    actions = generate_trajectory(seed, profile, n_rows=n_rows, n_cols=n_cols, noise=noise)
    assert is_monotone(actions)
    # the same, spelled out: no action is a no-op, and no property it sets changes later
    target, state = apply_actions(actions), SheetState()
    for action in actions:
        after = apply_actions([action], state)
        changed = state.diff(after)
        assert changed
        for ref, prop in changed:
            if prop == "merge":
                assert (ref in after.merged) == (ref in target.merged)
            else:
                assert after.props(ref)[prop] == target.props(ref)[prop]
        state = after
    assert state == target


def test_is_monotone_rejects_hand_made_counterexamples():
    A = parse_action
    assert is_monotone([A("INPUT | A1 | 1"), A("FONT_BOLD | A1 | true")])
    assert not is_monotone([A("INPUT | A1 | 1"), A("INPUT | A1 | 2")])         # overwritten
    assert not is_monotone([A("INPUT | A1 | 1"), A("INPUT | A1 | 1")])         # a no-op
    assert not is_monotone([A("FONT_BOLD | B1 | true"), A("MERGE | A1:C1 | true")])  # cleared


def test_bad_arguments():
    with pytest.raises(ConfigError, match="row_major"):
        generate_trajectory(0, "random_walk")
    with pytest.raises(ConfigError):
        generate_trajectory(0, n_cols=1)
    with pytest.raises(ConfigError):
        generate_trajectory(0, n_rows=0)
