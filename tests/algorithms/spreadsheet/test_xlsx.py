"""Trajectory files: written and read back, and a bad file named by file and line."""

from __future__ import annotations

import pytest

from raystudy.algorithms.spreadsheet import (
    PROFILES,
    generate_trajectory,
    read_trajectories,
    write_trajectory,
)
from raystudy.errors import DataError, MissingDataError


def test_trajectories_round_trip_through_text_files(tmp_path):
    runs = {p: generate_trajectory(7, p, n_rows=3, n_cols=3) for p in PROFILES}
    for name, actions in runs.items():
        write_trajectory(actions, tmp_path / f"{name}.txt")
    (tmp_path / "notes.md").write_text("not a trajectory")
    assert read_trajectories(tmp_path) == runs
    assert list(read_trajectories(tmp_path)) == sorted(runs)
    first = (tmp_path / "row_major.txt").read_text().splitlines()[0]
    assert first.startswith('INPUT | A1 | "') and first.endswith(' report"')


def test_blank_lines_and_crlf_are_read(tmp_path):
    (tmp_path / "s.txt").write_bytes(b'INPUT | A1 | "a"\r\n\r\nFONT_BOLD | A1 | true\r\n')
    [(name, actions)] = read_trajectories(tmp_path).items()
    assert name == "s" and [a.kind for a in actions] == ["INPUT", "FONT_BOLD"]
    assert actions[0].value == "a"


@pytest.mark.parametrize(("lines", "where", "why"), [
    (['INPUT | A1 | "a"', "FONT_BOLD | A1 | maybe"], "bad.txt:2:", "true or false"),
    (["MERGE | A1:B1 | true", "", 'INPUT | B1 | "x"'], "bad.txt:3:", "covered"),
])
def test_a_bad_line_is_named_by_file_and_line(tmp_path, lines, where, why):
    (tmp_path / "bad.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as info:
        read_trajectories(tmp_path)
    message = str(info.value)
    assert where in message and why in message and "\n" not in message


def test_missing_data_is_its_own_error(tmp_path):
    with pytest.raises(MissingDataError, match="no such folder"):
        read_trajectories(tmp_path / "absent")
    with pytest.raises(MissingDataError, match=r"\*\.txt"):
        read_trajectories(tmp_path)
