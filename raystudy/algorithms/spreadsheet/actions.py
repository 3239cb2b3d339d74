r"""Spreadsheet actions and their one-line text format (raystudy's reading of NAPE's).

Agrawal, Le, Gulwani & Verbruggen, "A Benchmark and Framework for Evaluating Next Action
Predictions in Spreadsheets" (arXiv 2606.13802, ICML 2026; napeval.github.io, "NAPE")
writes a user's session as one pipe-delimited line per action, e.g.
``FILL_COLOR | A1:D1 | #0D2B4E``, and names 9 action types without publishing four of them.
The 9 kinds here (:data:`KINDS`) and every value grammar below are **raystudy's reading**:

==================  ===========  ======================================================
kind                target       value (as written / as held in :attr:`Action.value`)
==================  ===========  ======================================================
``INPUT``           one cell     ``"text"`` (a JSON string) -> ``str``; a bare number
                                 ``12`` / ``-3.5`` / ``1e+20`` (JSON number) -> ``int``
                                 or ``float``; a bare formula ``=SUM(B3:B9)`` -> the
                                 ``str`` ``"=SUM(B3:B9)"``, kept as text, never evaluated
``FONT_BOLD``       cell, range  ``true`` | ``false`` -> ``bool``
``FONT_ITALIC``     cell, range  ``true`` | ``false`` -> ``bool``
``FONT_COLOR``      cell, range  ``#RRGGBB`` -> ``"#RRGGBB"`` (upper case)
``FILL_COLOR``      cell, range  ``#RRGGBB`` -> ``"#RRGGBB"`` (a solid fill)
``NUMBER_FORMAT``   cell, range  ``"0.00"`` (a JSON string) -> ``str``
``ALIGN``           cell, range  ``left`` | ``center`` | ``right`` -> ``str``
``BORDER_ALL``      cell, range  ``Thin, #0083AC`` -> ``("thin", "#0083AC")`` (all four
                                 sides of every cell; style in :data:`BORDER_STYLES`)
``MERGE``           range        ``true`` (merge) | ``false`` (unmerge) -> ``bool``
                    (or a cell,
                    to unmerge)
==================  ===========  ======================================================

A line is ``KIND | TARGET | VALUE``, split on the first two pipes (so a text value may hold
pipes); blanks around each field are dropped. Targets are A1 references or ranges
``A1:D1`` (read in either corner order, held top-left first; ``A1:A1`` is held as ``A1``),
columns ``A``..``XFD`` and rows 1..1048576 as in Excel. One form per value, so that
``parse_action(format_action(a)) == a`` and ``format_action`` of a parsed line is canonical:

* a text value starting with ``=`` *is* a formula (as in Excel and openpyxl) and is
  written bare; a JSON-quoted ``"=..."`` is refused rather than read as a formula;
* text is written with ``json.dumps(..., ensure_ascii=True)``, so no character inside it
  can end the line; a formula, written bare, may not hold a line break;
* a value a workbook cannot keep is refused: empty text (openpyxl reads ``""`` back as an
  empty cell), a carriage return (XML turns ``\r\n`` into ``\n``), control characters
  (openpyxl's ``IllegalCharacterError``), text over Excel's 32,767 characters, NaN and
  infinities.

A malformed line raises :class:`raystudy.errors.DataError` with one line naming it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterator
from typing import Any

from ...errors import DataError

KINDS: tuple[str, ...] = ("INPUT", "FONT_BOLD", "FONT_ITALIC", "FONT_COLOR", "FILL_COLOR",
                          "NUMBER_FORMAT", "ALIGN", "BORDER_ALL", "MERGE")
"""The 9 action kinds of raystudy's reading (NAPE publishes five of its nine by example)."""

FORMAT_KINDS: tuple[str, ...] = KINDS[1:]
"""Every kind but ``INPUT`` (the "format actions" of the ``cheap`` trigger)."""

ALIGNMENTS: tuple[str, ...] = ("left", "center", "right")
BORDER_STYLES: tuple[str, ...] = ("thin", "medium", "thick", "double", "dotted", "dashed",
                                  "hair")
"""Border styles whose lower-case name is also openpyxl's (``Side(style=...)``)."""

MAX_ROW, MAX_COL = 1_048_576, 16_384       # Excel's sheet size (XFD1048576)
MAX_TEXT = 32_767                          # Excel's characters per cell

_CELL = re.compile(r"([A-Za-z]{1,3})([1-9][0-9]{0,6})")
_COLOR = re.compile(r"#[0-9A-Fa-f]{6}")
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")   # JSON's number
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\r]")   # openpyxl's illegal set, and \r

Cell = tuple[int, int]
"""A cell as ``(row, col)``, both 1-based."""
Box = tuple[int, int, int, int]
"""A rectangle as ``(row1, col1, row2, col2)``, top-left then bottom-right, inclusive."""


# --------------------------------------------------------------------------- references
def column_letters(col: int) -> str:
    """``1 -> "A"``, ``27 -> "AA"`` (Excel's bijective base 26)."""
    letters = ""
    while col:
        col, rest = divmod(col - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def cell_ref(row: int, col: int) -> str:
    """``(3, 2) -> "B3"``."""
    return f"{column_letters(col)}{row}"


def parse_cell(ref: str) -> Cell:
    """``"B3" -> (3, 2)``; raises ``DataError`` outside Excel's sheet."""
    match = _CELL.fullmatch(ref.strip())
    if match is None:
        raise DataError(f"{ref!r} is not a cell reference like B3")
    col = 0
    for letter in match.group(1).upper():
        col = col * 26 + ord(letter) - 64
    row = int(match.group(2))
    if col > MAX_COL or row > MAX_ROW:
        raise DataError(f"{ref!r} lies outside the sheet (A1:XFD1048576)")
    return row, col


def parse_box(target: str) -> Box:
    """``"D1:A1" -> (1, 1, 1, 4)``: a cell or range as its top-left/bottom-right rectangle."""
    parts = target.split(":")
    if len(parts) > 2:
        raise DataError(f"{target!r} is not a cell or a range like A1:D1")
    (r1, c1), (r2, c2) = parse_cell(parts[0]), parse_cell(parts[-1])
    return min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2)


def box_ref(box: Box) -> str:
    """The canonical target text of a rectangle: ``"A1"`` or ``"A1:D1"``."""
    r1, c1, r2, c2 = box
    first = cell_ref(r1, c1)
    return first if (r1, c1) == (r2, c2) else f"{first}:{cell_ref(r2, c2)}"


def box_cells(box: Box) -> Iterator[Cell]:
    """The rectangle's cells, row by row."""
    r1, c1, r2, c2 = box
    for row in range(r1, r2 + 1):
        for col in range(c1, c2 + 1):
            yield row, col


def boxes_intersect(a: Box, b: Box) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


# --------------------------------------------------------------------------- values
def _check_text(text: str, what: str) -> str:
    if not text:
        raise DataError(f"empty {what} (a workbook reads it back as an empty cell)")
    if len(text) > MAX_TEXT:
        raise DataError(f"{what} of {len(text)} characters (Excel keeps {MAX_TEXT})")
    bad = _ILLEGAL.search(text)
    if bad:
        raise DataError(f"{what} holds {bad.group()!r}, which an .xlsx cannot keep")
    return text


def _check_value(kind: str, value: Any) -> Any:
    """The canonical value of ``kind`` (see the module's table), or ``DataError``."""
    if kind == "INPUT":
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise DataError(f"INPUT takes text, a number or a formula, not {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise DataError(f"INPUT takes a finite number, not {value!r}")
        if isinstance(value, str):
            _check_text(value, "formula" if value.startswith("=") else "text")
            if value.startswith("=") and (value == "=" or value != value.strip()):
                raise DataError(f"formula {value!r} is empty or has blanks around it")
            if value.startswith("=") and len(value.splitlines()) > 1:
                raise DataError(f"formula {value!r} holds a line break (it is written bare)")
        return value
    if kind in ("FONT_BOLD", "FONT_ITALIC", "MERGE"):
        if not isinstance(value, bool):
            raise DataError(f"{kind} takes true or false, not {value!r}")
        return value
    if kind in ("FONT_COLOR", "FILL_COLOR"):
        if not isinstance(value, str) or not _COLOR.fullmatch(value):
            raise DataError(f"{kind} takes a colour #RRGGBB, not {value!r}")
        return value.upper()
    if kind == "NUMBER_FORMAT":
        if not isinstance(value, str):
            raise DataError(f"NUMBER_FORMAT takes a quoted format, not {value!r}")
        return _check_text(value, "number format")
    if kind == "ALIGN":
        if value not in ALIGNMENTS:
            raise DataError(f"ALIGN takes one of {', '.join(ALIGNMENTS)}, not {value!r}")
        return value
    if kind == "BORDER_ALL":
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise DataError(f"BORDER_ALL takes (style, #RRGGBB), not {value!r}")
        style, color = value
        if not isinstance(style, str) or style.lower() not in BORDER_STYLES:
            raise DataError(f"border style {style!r} is not one of {', '.join(BORDER_STYLES)}")
        if not isinstance(color, str) or not _COLOR.fullmatch(color):
            raise DataError(f"border colour {color!r} is not #RRGGBB")
        return style.lower(), color.upper()
    raise DataError(f"unknown action kind {kind!r}; kinds: {', '.join(KINDS)}")


@dataclasses.dataclass(frozen=True)
class Action:
    """One user action: ``kind`` in :data:`KINDS`, ``target`` a cell or range, ``value``.

    Constructed values are checked and made canonical (target top-left first, colours
    upper case, border style lower case); a bad one raises ``DataError``. ``INPUT`` takes
    one cell and ``MERGE | R | true`` a range of two or more cells (``false``, unmerging
    what meets R, also takes one cell).
    """

    kind: str
    target: str
    value: Any
    _box: Box = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise DataError(f"unknown action kind {self.kind!r}; kinds: {', '.join(KINDS)}")
        if not isinstance(self.target, str):
            raise DataError(f"target {self.target!r} is not a cell or range text")
        box = parse_box(self.target)
        if self.kind == "INPUT" and box[:2] != box[2:]:
            raise DataError(f"INPUT takes one cell, not the range {self.target}")
        object.__setattr__(self, "value", _check_value(self.kind, self.value))
        if self.kind == "MERGE" and self.value and box[:2] == box[2:]:
            raise DataError(f"MERGE true takes a range of two or more cells, not {self.target}")
        object.__setattr__(self, "target", box_ref(box))
        object.__setattr__(self, "_box", box)

    @property
    def box(self) -> Box:
        """The target as ``(row1, col1, row2, col2)``."""
        return self._box


# --------------------------------------------------------------------------- text format
def _parse_value(kind: str, text: str) -> Any:
    if kind == "INPUT":
        if text.startswith('"'):
            value = _json_string(text)
            if value.startswith("="):
                raise DataError("a quoted text starting with '=' (write a formula bare)")
            return value
        if text.startswith("="):
            return text
        number = _NUMBER.fullmatch(text)
        if number:
            return float(text) if number.group(2) or number.group(3) else int(text)
        raise DataError(f"INPUT value {text!r} is not a quoted text, a number or =formula")
    if kind in ("FONT_BOLD", "FONT_ITALIC", "MERGE"):
        if text not in ("true", "false"):
            raise DataError(f"{kind} value {text!r} is not true or false")
        return text == "true"
    if kind == "NUMBER_FORMAT":
        return _json_string(text)
    if kind == "BORDER_ALL":
        style, comma, color = text.partition(",")
        if not comma:
            raise DataError(f"BORDER_ALL value {text!r} is not 'Style, #RRGGBB'")
        return style.strip(), color.strip()
    return text


def _json_string(text: str) -> str:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, str):
        raise DataError(f"{text!r} is not a JSON-quoted string")
    return value


def parse_action(line: str) -> Action:
    """Read ``KIND | TARGET | VALUE`` (see the module docstring); ``DataError`` naming
    the line if it is malformed."""
    try:
        fields = line.rstrip("\n").split("|", 2)
        if len(fields) != 3:
            raise DataError("expected KIND | TARGET | VALUE")
        kind, target, text = (field.strip() for field in fields)
        if kind not in KINDS:
            raise DataError(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
        return Action(kind, target, _parse_value(kind, text))
    except DataError as exc:
        raise DataError(f"bad action line {line!r}: {exc}") from None


def format_value(kind: str, value: Any) -> str:
    """The VALUE field of an action of ``kind`` (canonical form)."""
    if kind == "INPUT":
        if isinstance(value, str):
            return value if value.startswith("=") else json.dumps(value, ensure_ascii=True)
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "NUMBER_FORMAT":
        return json.dumps(value, ensure_ascii=True)
    if kind == "BORDER_ALL":
        return f"{value[0].capitalize()}, {value[1]}"
    return str(value)


def format_action(action: Action) -> str:
    """The action's line ``KIND | TARGET | VALUE`` (no newline); inverse of
    :func:`parse_action`."""
    return f"{action.kind} | {action.target} | {format_value(action.kind, action.value)}"
