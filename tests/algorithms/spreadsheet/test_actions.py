"""The action line format: NAPE's published examples parsed by hand, the parse/format round
trip (hypothesis), and malformed lines raising one DataError line that names them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raystudy.algorithms.spreadsheet import KINDS, Action, format_action, parse_action
from raystudy.algorithms.spreadsheet.actions import (
    BORDER_STYLES,
    MAX_COL,
    MAX_ROW,
    box_ref,
    cell_ref,
    column_letters,
    parse_cell,
)
from raystudy.errors import DataError, UserError


def test_the_project_page_examples_parse_to_the_values_written_by_hand():
    assert parse_action('INPUT | A1 | "Task"') == Action("INPUT", "A1", "Task")
    assert parse_action("FONT_BOLD | A1:D1 | true").value is True
    assert parse_action("FILL_COLOR | A1:D1 | #0D2B4E") == Action("FILL_COLOR", "A1:D1", "#0D2B4E")
    border = parse_action("BORDER_ALL | A1:C3 | Thin, #0083AC")
    assert (border.target, border.value) == ("A1:C3", ("thin", "#0083AC"))
    assert parse_action("MERGE | A1:G1 | true") == Action("MERGE", "A1:G1", True)
    assert parse_action("MERGE | A1:G1 | false").value is False


def test_values_targets_and_canonical_forms():
    formula = parse_action("INPUT | B10 | =SUM(B3:B9)")
    assert formula.value == "=SUM(B3:B9)"                     # kept as text
    twelve, half, big = (parse_action(f"INPUT | A1 | {t}").value for t in ("12", "-3.5", "1e+20"))
    assert (twelve, type(twelve)) == (12, int)
    assert (half, type(half)) == (-3.5, float)
    assert (big, type(big)) == (1e20, float)
    assert parse_action('INPUT | A1 | "12"').value == "12"     # quoted: text, not a number
    assert parse_action('INPUT | a1 |  "a | b"  ').value == "a | b"   # split on two pipes only
    assert parse_action("FONT_ITALIC | d3:b1 | true").target == "B1:D3"
    assert parse_action("ALIGN | C2:C2 | right").target == "C2"
    assert parse_action("FONT_COLOR | A1 | #0d2b4e").value == "#0D2B4E"
    assert parse_action('NUMBER_FORMAT | B3:B9 | "\\"$\\"#,##0.00"').value == '"$"#,##0.00'
    assert format_action(Action("BORDER_ALL", "C3:A1", ("MEDIUM", "#00ff00"))) == \
        "BORDER_ALL | A1:C3 | Medium, #00FF00"
    assert format_action(Action("INPUT", "A1", "Café")) == 'INPUT | A1 | "Caf\\u00e9"'
    assert format_action(Action("INPUT", "A1", "=A2+1")) == "INPUT | A1 | =A2+1"
    assert format_action(Action("INPUT", "A1", 0.1)) == "INPUT | A1 | 0.1"


def test_cell_references_against_excel_columns():
    assert [column_letters(c) for c in (1, 26, 27, 52, 702, 703, MAX_COL)] == \
        ["A", "Z", "AA", "AZ", "ZZ", "AAA", "XFD"]
    assert parse_cell("XFD1048576") == (MAX_ROW, MAX_COL)
    assert cell_ref(3, 28) == "AB3"
    assert box_ref((2, 1, 2, 1)) == "A2"


# ----------------------------------------------------------------------------- round trip
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"
                              + "".join(map(chr, [*range(0, 9), 11, 12, *range(14, 32)]))),
                min_size=1, max_size=30)
_COLOR = st.from_regex(r"#[0-9A-Fa-f]{6}", fullmatch=True)


@st.composite
def actions(draw):
    kind = draw(st.sampled_from(KINDS))
    r1 = draw(st.integers(1, MAX_ROW))
    c1 = draw(st.integers(1, MAX_COL - (kind == "MERGE")))
    if kind == "INPUT":
        target = cell_ref(r1, c1)
        value = draw(st.one_of(
            _TEXT.filter(lambda t: not t.startswith("=")),
            _TEXT.map(lambda t: "=" + t.strip()).filter(
                lambda t: len(t) > 1 and len(t.splitlines()) == 1),
            st.integers(-10**30, 10**30),
            st.floats(allow_nan=False, allow_infinity=False)))
    else:
        r2 = draw(st.integers(r1, min(MAX_ROW, r1 + 5)))
        c2 = draw(st.integers(c1 + (kind == "MERGE"), min(MAX_COL, c1 + 5)))  # merge: 2+ cells
        target = box_ref((r1, c1, r2, c2))
        value = {
            "FONT_BOLD": st.booleans(), "FONT_ITALIC": st.booleans(), "MERGE": st.booleans(),
            "FONT_COLOR": _COLOR, "FILL_COLOR": _COLOR, "NUMBER_FORMAT": _TEXT,
            "ALIGN": st.sampled_from(["left", "center", "right"]),
            "BORDER_ALL": st.tuples(st.sampled_from(BORDER_STYLES), _COLOR),
        }[kind]
        value = draw(value)
    return Action(kind, target, value)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(actions())
def test_parse_inverts_format_and_lines_are_one_ascii_line(action):
    line = format_action(action)
    assert len((line + "\n").splitlines()) == 1              # one line, whatever splits it
    if not (action.kind == "INPUT" and str(action.value).startswith("=")):
        assert line.isascii()                               # text is JSON-escaped
    back = parse_action(line)
    assert back == action
    assert type(back.value) is type(action.value)          # 1 and 1.0 stay apart
    assert format_action(back) == line                      # canonical


# ----------------------------------------------------------------------------- bad input
BAD = [
    ("INPUT | A1", "KIND | TARGET | VALUE"),
    ("BOLD | A1 | true", "unknown kind"),
    ("INPUT | A1:B2 | 3", "one cell"),
    ("INPUT | A0 | 3", "not a cell reference"),
    ("INPUT | XFE1 | 3", "outside the sheet"),
    ("INPUT | A1048577 | 3", "outside the sheet"),
    ("INPUT | A1:B2:C3 | 1", "not a cell or a range"),
    ("INPUT | A1 | Task", "not a quoted text"),
    ('INPUT | A1 | ""', "empty text"),
    ('INPUT | A1 | "=A2"', "write a formula bare"),
    ("INPUT | A1 | =", "formula"),
    ("INPUT | A1 | NaN", "not a quoted text"),
    ("INPUT | A1 | 1e999", "finite"),
    ("INPUT | A1 | true", "not a quoted text"),
    ('INPUT | A1 | "a" x', "JSON-quoted"),
    ('INPUT | A1 | "a\\rb"', "cannot keep"),
    ('INPUT | A1 | "\\u0001"', "cannot keep"),
    ("INPUT | A1 | =A1\u2028+1", "line break"),
    ("INPUT | A1 | 3\nFONT_BOLD | A1 | true", "not a quoted text"),
    ("FONT_BOLD | A1 | yes", "true or false"),
    ("FILL_COLOR | A1 | #12345", "#RRGGBB"),
    ("FILL_COLOR | A1 | red", "#RRGGBB"),
    ("ALIGN | A1 | middle", "left, center, right"),
    ("BORDER_ALL | A1 | Thin #000000", "Style, #RRGGBB"),
    ("BORDER_ALL | A1 | Wavy, #000000", "border style"),
    ("MERGE | A1 | true", "two or more cells"),
    ("NUMBER_FORMAT | A1 | 0.00", "JSON-quoted"),
]


@pytest.mark.parametrize(("line", "reason"), BAD)
def test_a_malformed_line_raises_one_data_error_line_naming_it(line, reason):
    with pytest.raises(DataError) as info:
        parse_action(line)
    message = str(info.value)
    assert "\n" not in message                 # the CLI prints it as one line (exit 2)
    assert repr(line) in message and reason in message
    assert isinstance(info.value, UserError)


def test_constructed_actions_are_checked_too():
    for kind, target, value in [("INPUT", "A1", True), ("MERGE", "B2", True),
                                ("ALIGN", "A1", "justify"), ("PASTE", "A1", 1),
                                ("INPUT", "A1", float("inf")), ("BORDER_ALL", "A1", "thin")]:
        with pytest.raises(DataError):
            Action(kind, target, value)
    assert json.loads(format_action(Action("INPUT", "A1", 'say "hi" | bye')).split("|", 2)[2]) \
        == 'say "hi" | bye'
