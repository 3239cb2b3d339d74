"""Generated sheets and the action trajectories of heuristic users (raystudy's reading of
NAPE's first stage, without its LLM and human refinement).

NAPE builds its 52 sequences from public workbooks by "symbolic heuristics (cell->range
merge, sampled order)", then an LLM judge-editor and human annotators (napeval.github.io);
neither the sequences nor the heuristics are public. Here a seed fixes one **generated**
sheet of ``n_rows`` data rows and ``n_cols`` columns (no real workbook behind it):

* row 1: a title in ``A1``, merged over the table's width, bold, coloured, centred;
* row 2: a header row of column names: bold, white on a solid fill, centred, bordered;
* rows 3..``n_rows + 2``: typed columns. Column A holds item labels (pseudo-words, in
  italics); the others are drawn from ``id`` (an arithmetic progression, format ``"000"``),
  ``int`` (``"#,##0"``), ``float`` (two decimals, ``"#,##0.00"``) and ``percent``
  (``"0.0%"``);
* row ``n_rows + 3``: a totals row, ``"Total"`` then ``=SUM(..)`` under int and float
  columns and ``=AVERAGE(..)`` under percent ones (kept as text, never evaluated), in the
  column's number format, bold and bordered.

A *profile* (:data:`PROFILES`) is the order a user makes that sheet in:

* ``row_major``: each block's inputs row by row, each block's formatting right after it
  (number formats as column ranges once the totals are in);
* ``column_major``: title and header as above, then the table column by column, each
  column's total and format right after its cells;
* ``data_then_format``: every input first (row by row), then all formatting;
* ``format_as_you_go``: row by row, each cell formatted on its own right after its input.

Every profile reaches the same sheet. Local reordering noise then swaps neighbouring
actions with probability ``noise`` (default 0.1) where their targets do not meet, so the
order changes but not the result. Trajectories are *monotone*: every action changes the
state and sets each property it changes to its final value (:func:`is_monotone`); the
title's ``MERGE`` comes before the formats of its row, since formatting cells that a merge
then clears would not be. Deterministic per ``(seed, profile, n_rows, n_cols, noise)``
(``random.Random`` seeded with strings, so independent of ``PYTHONHASHSEED``).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

from ...errors import ConfigError
from .actions import Action, boxes_intersect, cell_ref, column_letters
from .state import SheetState, apply_actions

PROFILES: tuple[str, ...] = ("row_major", "column_major", "data_then_format",
                             "format_as_you_go")
COLUMN_TYPES: tuple[str, ...] = ("id", "int", "float", "percent")
NUMBER_FORMATS: dict[str, str] = {"id": "000", "int": "#,##0", "float": "#,##0.00",
                                  "percent": "0.0%"}
PALETTE: tuple[str, ...] = ("#0D2B4E", "#1F4E79", "#385723", "#7F6000", "#843C0C",
                            "#4B2C5E")
_NAMES = {"label": ("Item", "Name", "Product", "Region"),
          "id": ("No.", "Code", "Ref"),
          "int": ("Units", "Count", "Stock", "Visits", "Orders"),
          "float": ("Price", "Cost", "Amount", "Weight", "Budget"),
          "percent": ("Share", "Rate", "Margin", "Growth")}
_SYLLABLES = ("ka", "lo", "mi", "ren", "tu", "sa", "vor", "el", "dan", "po", "ri", "zel")


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()


@dataclasses.dataclass
class _Sheet:
    """One generated sheet as blocks of actions, before a profile orders them."""

    n_cols: int
    first_row: int
    total_row: int
    columns: list[list[Any]]        # per column: data values, then the totals cell (or None)
    title_in: list[Action]
    title_fmt: list[Action]
    header_in: list[Action]
    header_fmt: list[Action]
    total_fmt: list[Action]
    column_fmt: list[Action]        # per column: its format as one range action
    cell_fmt: dict[tuple[int, int], list[Action]]   # (row, column index): per-cell formats


def _blocks(seed: int, n_rows: int, n_cols: int) -> _Sheet:
    """The sheet of ``seed``: every block's inputs and formats, independent of profile."""
    rng = random.Random(f"spreadsheet-sheet:{seed}")
    types = ["label"] + [rng.choice(COLUMN_TYPES[1:]) for _ in range(n_cols - 1)]
    if rng.random() < 0.5:
        types[1] = "id"
    last = column_letters(n_cols)
    first_row, last_row = 3, n_rows + 2
    total_row = last_row + 1
    fill, border_color = rng.choice(PALETTE), rng.choice(PALETTE)
    border = (rng.choice(("thin", "medium")), border_color)

    used: set[str] = set()
    header = []
    for kind in types:
        name = rng.choice(_NAMES[kind])
        while name in used:
            name = f"{name} {len(used)}"
        used.add(name)
        header.append(name)

    start, step = rng.randint(1, 100), rng.choice((1, 1, 5, 10))
    columns: list[list[Any]] = []
    for j, kind in enumerate(types):
        if kind == "label":
            cells: list[Any] = [_word(rng) for _ in range(n_rows)]
        elif kind == "id":
            cells = [start + step * i for i in range(n_rows)]
        elif kind == "int":
            cells = [rng.randint(3, 999) for _ in range(n_rows)]
        elif kind == "float":
            cells = [float(f"{rng.uniform(1, 500):.2f}") for _ in range(n_rows)]
        else:
            cells = [float(f"{rng.uniform(0.01, 0.99):.3f}") for _ in range(n_rows)]
        col = column_letters(j + 1)
        span = f"{col}{first_row}:{col}{last_row}"
        total: Any = None
        if kind == "label":
            total = "Total"
        elif kind in ("int", "float"):
            total = f"=SUM({span})"
        elif kind == "percent":
            total = f"=AVERAGE({span})"
        columns.append(cells + [total])

    title = f"{_word(rng)} {_word(rng)} report"
    title_row, header_row = f"A1:{last}1", f"A2:{last}2"
    total_span = f"A{total_row}:{last}{total_row}"
    cell_format: dict[tuple[int, int], list[Action]] = {}
    column_formats: list[Action] = []
    for j, kind in enumerate(types):
        col = column_letters(j + 1)
        value: Any
        if kind == "label":
            format_kind, value, end = "FONT_ITALIC", True, last_row
        else:
            format_kind, value = "NUMBER_FORMAT", NUMBER_FORMATS[kind]
            end = last_row if columns[j][-1] is None else total_row
        column_formats.append(Action(format_kind, f"{col}{first_row}:{col}{end}", value))
        for r in range(first_row, end + 1):
            cell_format[(r, j)] = [Action(format_kind, f"{col}{r}", value)]
    return _Sheet(
        n_cols=n_cols, first_row=first_row, total_row=total_row, columns=columns,
        title_in=[Action("INPUT", "A1", title)],
        title_fmt=[Action("MERGE", title_row, True), Action("FONT_BOLD", title_row, True),
                   Action("FONT_COLOR", title_row, fill), Action("ALIGN", title_row, "center")],
        header_in=[Action("INPUT", cell_ref(2, j + 1), name) for j, name in enumerate(header)],
        header_fmt=[Action("FONT_BOLD", header_row, True), Action("FILL_COLOR", header_row, fill),
                    Action("FONT_COLOR", header_row, "#FFFFFF"),
                    Action("ALIGN", header_row, "center"),
                    Action("BORDER_ALL", header_row, border)],
        total_fmt=[Action("FONT_BOLD", total_span, True), Action("BORDER_ALL", total_span, border)],
        column_fmt=column_formats, cell_fmt=cell_format)


def _input(sheet: _Sheet, row: int, j: int) -> list[Action]:
    value = sheet.columns[j][row - sheet.first_row]
    return [] if value is None else [Action("INPUT", cell_ref(row, j + 1), value)]


def _order(sheet: _Sheet, profile: str) -> list[Action]:
    rows = range(sheet.first_row, sheet.total_row + 1)
    cols = range(sheet.n_cols)
    head = sheet.title_in + sheet.title_fmt + sheet.header_in + sheet.header_fmt
    row_by_row = [a for r in rows for j in cols for a in _input(sheet, r, j)]
    if profile == "row_major":
        return head + row_by_row + sheet.column_fmt + sheet.total_fmt
    if profile == "column_major":
        table = [a for j in cols
                 for a in [b for r in rows for b in _input(sheet, r, j)] + [sheet.column_fmt[j]]]
        return head + table + sheet.total_fmt
    if profile == "data_then_format":
        return (sheet.title_in + sheet.header_in + row_by_row + sheet.title_fmt
                + sheet.header_fmt + sheet.column_fmt + sheet.total_fmt)
    table = [a for r in rows for j in cols
             for a in _input(sheet, r, j) + sheet.cell_fmt.get((r, j), [])]
    return head + table + sheet.total_fmt


def generate_trajectory(seed: int, profile: str = "row_major", *, n_rows: int = 10,
                        n_cols: int = 5, noise: float = 0.1) -> list[Action]:
    """The actions a user of ``profile`` takes to make sheet ``seed`` (module docstring).

    Args:
        seed: fixes the sheet (the same for every profile).
        profile: one of :data:`PROFILES` (default ``"row_major"``).
        n_rows: data rows (default 10; the sheet has ``n_rows + 3`` rows).
        n_cols: columns, the label column included (default 5, at least 2).
        noise: probability of swapping two neighbouring actions with disjoint targets
            (default 0.1; 0 keeps the profile's order).
    """
    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r}; profiles: {', '.join(PROFILES)}")
    if n_rows < 1 or n_cols < 2 or n_cols > 702:
        raise ConfigError(f"n_rows={n_rows} must be >= 1 and n_cols={n_cols} in 2..702")
    if not 0 <= noise <= 1:
        raise ConfigError(f"noise={noise} must be in [0, 1]")
    actions = _order(_blocks(seed, n_rows, n_cols), profile)
    rng = random.Random(f"spreadsheet-order:{seed}:{profile}")
    i = 0
    while i < len(actions) - 1:
        a, b = actions[i], actions[i + 1]
        if rng.random() < noise and not boxes_intersect(a.box, b.box):
            actions[i], actions[i + 1] = b, a
            i += 2
        else:
            i += 1
    return actions


def is_monotone(actions: Sequence[Action]) -> bool:
    """Whether every action changes the state and sets each property or merge it changes
    to its final value (the value after all of ``actions``)."""
    from .online import accepts

    target = apply_actions(actions)
    state = SheetState()
    for action in actions:
        if not accepts(state, [action], target):
            return False
        state._apply(action)
    return True
