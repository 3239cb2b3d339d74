"""The sheet state against hand-worked cases and against openpyxl 3.1.5: the same actions
written through openpyxl, saved, reloaded and read cell by cell, merges included."""

from __future__ import annotations

import pytest

from raystudy.algorithms.spreadsheet import (
    DEFAULTS,
    PROFILES,
    Action,
    SheetState,
    apply_actions,
    generate_trajectory,
    parse_action,
    write_xlsx,
    xlsx_mismatches,
)
from raystudy.errors import DataError

openpyxl = pytest.importorskip("openpyxl")
from openpyxl.cell.cell import MergedCell  # noqa: E402
from openpyxl.styles import Border, Font, PatternFill, Side  # noqa: E402


def A(line: str) -> Action:
    return parse_action(line)


def test_the_empty_sheet_has_exactly_the_documented_defaults():
    assert SheetState().props("B3") == {
        "value": None, "bold": False, "italic": False, "font_color": None, "fill": None,
        "number_format": "General", "align": None, "border": None}
    assert SheetState().merged == frozenset()
    assert SheetState() == SheetState()


def test_each_kind_sets_its_property_on_every_cell_of_its_target():
    state = apply_actions([
        A('INPUT | B2 | "Name"'), A("INPUT | B3 | 4"), A("FONT_BOLD | B2:C3 | true"),
        A("FONT_ITALIC | C3 | true"), A("FONT_COLOR | B2 | #ff0000"),
        A("FILL_COLOR | B2:B3 | #00FF00"), A('NUMBER_FORMAT | B3 | "0.00"'),
        A("ALIGN | C2 | right"), A("BORDER_ALL | C3 | Double, #000000")])
    assert state.props("B2") == {**DEFAULTS, "value": "Name", "bold": True,
                                 "font_color": "#FF0000", "fill": "#00FF00"}
    assert state.props("B3") == {**DEFAULTS, "value": 4, "bold": True, "fill": "#00FF00",
                                 "number_format": "0.00"}
    assert state.props("C2") == {**DEFAULTS, "bold": True, "align": "right"}
    assert state.props("C3") == {**DEFAULTS, "bold": True, "italic": True,
                                 "border": ("double", "#000000")}
    assert state.cells() == ["B2", "C2", "B3", "C3"]


def test_merge_keeps_the_top_left_value_clears_the_rest_and_blocks_covered_input():
    before = [A('INPUT | A1 | "Title"'), A('INPUT | B1 | "lost"'), A("FONT_BOLD | B1 | true"),
              A("FILL_COLOR | C1 | #123456")]
    state = apply_actions(before + [A("MERGE | A1:C1 | true")])
    assert state.merged == frozenset({"A1:C1"})
    assert state.props("A1")["value"] == "Title"
    assert state.props("B1") == DEFAULTS and state.props("C1") == DEFAULTS
    assert state.merge_of("C1") == "A1:C1" and state.merge_of("A1") == "A1:C1"
    assert state.merge_of("D1") is None
    with pytest.raises(DataError) as info:
        apply_actions([A('INPUT | B1 | "x"')], state)
    assert "B1" in str(info.value) and "A1:C1" in str(info.value)
    assert "\n" not in str(info.value)
    # formatting the merged range formats its anchor only; a covered cell holds nothing
    filled = apply_actions([A("FILL_COLOR | A1:C1 | #ABCDEF"), A("FONT_BOLD | C1 | true")], state)
    assert filled.props("A1")["fill"] == "#ABCDEF" and filled.props("B1") == DEFAULTS
    assert state.diff(filled) == [("A1", "fill")]
    # merging again is no change; an overlapping merge is refused
    assert apply_actions([A("MERGE | A1:C1 | true")], state) == state
    assert not state.changes(A("MERGE | A1:C1 | true"))
    with pytest.raises(DataError, match="overlaps the merged range A1:C1"):
        apply_actions([A("MERGE | C1:D2 | true")], state)
    # unmerging any range that meets it; the covered cells stay empty and take input again
    assert state.changes(A("MERGE | B1:B5 | false")) and not state.changes(A("MERGE | E1 | false"))
    open_ = apply_actions([A("MERGE | B1 :B5 | false")], state)
    assert open_.merged == frozenset() and open_.props("B1") == DEFAULTS
    assert apply_actions([A('INPUT | B1 | "x"')], open_).props("B1")["value"] == "x"
    assert not open_.changes(A("MERGE | B1:B5 | false"))


def test_apply_actions_returns_a_new_state_and_leaves_its_inputs_alone():
    actions = [A("INPUT | A1 | 1"), A("FONT_BOLD | A1 | true")]
    copy = list(actions)
    first = apply_actions(actions[:1])
    second = apply_actions(actions[1:], first)
    assert first == apply_actions(actions[:1]) and first != second
    assert second.props("A1") == {**DEFAULTS, "value": 1, "bold": True}
    assert actions == copy


def test_equality_is_by_state_not_by_history():
    one = apply_actions([A("INPUT | A1 | 1"), A("FONT_BOLD | A1:B1 | true"),
                         A("FONT_BOLD | B1 | false")])
    two = apply_actions([A("FONT_BOLD | A1 | true"), A("INPUT | A1 | 1.0")])
    assert one == two                                  # 1 == 1.0, as a workbook stores them
    assert apply_actions([A('INPUT | A1 | "1"')]) != apply_actions([A("INPUT | A1 | 1")])
    assert one.diff(apply_actions([A("INPUT | A1 | 2")])) == [("A1", "value"), ("A1", "bold")]


def test_changes_says_whether_an_action_would_change_the_state():
    state = apply_actions([A("INPUT | A1 | 5"), A("FONT_BOLD | A1:A3 | true"),
                           A("MERGE | C1:D1 | true")])
    assert not state.changes(A("INPUT | A1 | 5"))
    assert state.changes(A('INPUT | A1 | "5"'))
    assert not state.changes(A("FONT_BOLD | A2:A3 | true"))
    assert state.changes(A("FONT_BOLD | A3:A4 | true"))
    assert not state.changes(A("FONT_BOLD | D1 | true"))       # covered
    assert state.changes(A("MERGE | D5:E5 | true"))
    with pytest.raises(DataError):
        state.changes(A('INPUT | D1 | "x"'))


# ----------------------------------------------------------------------------- openpyxl
def _openpyxl_props(cell) -> dict:
    """The test's own reading of an openpyxl cell (rgb colours as #RRGGBB)."""
    def rgb(color):
        return None if color is None or color.type != "rgb" else "#" + color.rgb[-6:]

    sides = [cell.border.left, cell.border.right, cell.border.top, cell.border.bottom]
    found = {(s.style, rgb(s.color)) for s in sides if s is not None and s.style is not None}
    if not found:
        border = None
    else:
        assert len(found) == 1 and all(s.style for s in sides), f"partial border on {cell}"
        border = found.pop()
    fill = cell.fill
    return {"value": cell.value, "bold": bool(cell.font.b), "italic": bool(cell.font.i),
            "font_color": rgb(cell.font.color),
            "fill": rgb(fill.fgColor) if fill.fill_type == "solid" else fill.fill_type,
            "number_format": cell.number_format, "align": cell.alignment.horizontal,
            "border": border}


def _compare_with_openpyxl(state: SheetState, path) -> int:
    """Cell by cell over the used range and one more row and column; returns cells read."""
    ws = openpyxl.load_workbook(path).active
    assert {str(r) for r in ws.merged_cells.ranges} == state.merged
    anchors = {}
    for rng in ws.merged_cells.ranges:
        for row in ws.iter_rows(min_row=rng.min_row, max_row=rng.max_row,
                                min_col=rng.min_col, max_col=rng.max_col):
            for cell in row:
                anchors[cell.coordinate] = ws.cell(rng.min_row, rng.min_col)
    seen = 0
    for row in ws.iter_rows(min_row=1, max_row=ws.max_row + 1, min_col=1,
                            max_col=ws.max_column + 1):
        for cell in row:
            seen += 1
            mine = state.props(cell.coordinate)
            if isinstance(cell, MergedCell):
                # covered: no value, no style of its own; openpyxl only redraws the
                # anchor's outline on the edge cells
                assert mine == DEFAULTS
                assert cell.value is None and not cell.font.b and cell.fill.fill_type is None
                assert cell.number_format == "General" and cell.alignment.horizontal is None
                anchor_border = anchors[cell.coordinate].border
                for side in ("left", "right", "top", "bottom"):
                    style = getattr(cell.border, side).style
                    assert style in (None, getattr(anchor_border, side).style)
            else:
                assert _openpyxl_props(cell) == mine, cell.coordinate
    return seen


def test_a_sheet_built_with_raw_openpyxl_calls_reads_as_the_state_of_the_same_actions(tmp_path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "Title"
    ws["B1"] = "gone"
    ws["B1"].font = Font(b=True)
    ws.merge_cells("A1:C1")
    ws["A1"].font = Font(b=True, color="FF0D2B4E")
    ws["A2"] = 3
    ws["A2"].number_format = "0.00"
    ws["B2"] = "=SUM(A2:A2)"
    ws["B2"].fill = PatternFill(fill_type="solid", fgColor="FF00FF00")
    side = Side(style="thin", color="FF0083AC")
    ws["C2"].border = Border(left=side, right=side, top=side, bottom=side)
    path = tmp_path / "raw.xlsx"
    wb.save(path)
    state = apply_actions([
        A('INPUT | A1 | "Title"'), A('INPUT | B1 | "gone"'), A("FONT_BOLD | B1 | true"),
        A("MERGE | A1:C1 | true"), A("FONT_BOLD | A1:C1 | true"),
        A("FONT_COLOR | A1 | #0D2B4E"), A("INPUT | A2 | 3"), A('NUMBER_FORMAT | A2 | "0.00"'),
        A("INPUT | B2 | =SUM(A2:A2)"), A("FILL_COLOR | B2 | #00FF00"),
        A("BORDER_ALL | C2 | Thin, #0083AC")])
    assert _compare_with_openpyxl(state, path) == 12
    assert xlsx_mismatches(state, path) == 0


MERGES = [
    'INPUT | A1 | "T"', 'INPUT | C1 | 7', "FONT_ITALIC | A1:D2 | true",
    "BORDER_ALL | A1 | Medium, #112233", "MERGE | A1:D2 | true",       # clears B1:D2
    "FILL_COLOR | A1:D2 | #445566", "FONT_BOLD | C2 | true",            # anchor only / nothing
    "MERGE | A5:B6 | true", "MERGE | A6:A6 | false",                    # unmerged again
    'INPUT | B6 | "after"', "ALIGN | A5:B6 | center", "MERGE | E1:F1 | true",
    'INPUT | E1 | 2.5', 'NUMBER_FORMAT | E1:F1 | "0.0%"', "MERGE | E1:F1 | true",
    "FONT_BOLD | A7:B7 | true", "FONT_BOLD | B7 | false",                # back to plain
    "FONT_ITALIC | A8 | true", "FONT_ITALIC | A8 | false", "ALIGN | A8 | left",
]


def test_hand_made_merges_match_openpyxl_after_save_and_reload(tmp_path):
    actions = [A(line) for line in MERGES]
    state = apply_actions(actions)
    assert state.merged == frozenset({"A1:D2", "E1:F1"})
    path = tmp_path / "merges.xlsx"
    write_xlsx(actions, path)
    assert _compare_with_openpyxl(state, path) > 20
    assert xlsx_mismatches(state, path) == 0


@pytest.mark.parametrize("profile", PROFILES)
def test_generated_sheets_match_openpyxl_cell_by_cell(tmp_path, profile):
    for seed in (0, 1, 2):
        actions = generate_trajectory(seed, profile, n_rows=4, n_cols=4)
        state = apply_actions(actions)
        path = tmp_path / f"{profile}-{seed}.xlsx"
        write_xlsx(actions, path)
        assert _compare_with_openpyxl(state, path) == 8 * 5       # 7 rows x 4 cols, +1 each
        assert xlsx_mismatches(state, path) == 0


def test_xlsx_mismatches_counts_each_differing_property_and_merge(tmp_path):
    actions = generate_trajectory(5, "row_major", n_rows=3, n_cols=3)
    state = apply_actions(actions)
    path = tmp_path / "sheet.xlsx"
    write_xlsx(actions, path)
    wb = openpyxl.load_workbook(path)
    ws = wb.active
    ws["A3"] = "changed"                                     # one value
    ws["B2"].fill = PatternFill(fill_type="solid", fgColor="FF000000")   # one fill
    ws["C6"].font = Font(b=False, i=True)                    # bold off, italic on: two
    ws.unmerge_cells("A1:C1")                                # one merge
    wb.save(path)
    assert state.props("C6")["bold"] is True and state.props("C6")["italic"] is False
    assert xlsx_mismatches(state, path) == 5


def test_write_xlsx_refuses_what_the_state_model_refuses(tmp_path):
    for lines in (["MERGE | A1:B1 | true", 'INPUT | B1 | "x"'],
                  ["MERGE | A1:B1 | true", "MERGE | B1:C1 | true"]):
        actions = [A(line) for line in lines]
        with pytest.raises(DataError):
            apply_actions(actions)
        with pytest.raises(DataError):
            write_xlsx(actions, tmp_path / "bad.xlsx")
