"""Trajectory files and .xlsx workbooks: the same actions through openpyxl, and reading a
workbook back into a :class:`~.state.SheetState`.

* :func:`write_trajectory` / :func:`read_trajectories`: one action per line in NAPE's text
  format (:func:`~.actions.format_action`), one ``*.txt`` file per sheet. Blank lines are
  skipped; a malformed or inapplicable line raises ``DataError`` naming ``file:line``. This
  is the ``file`` data source (NAPE's 52 sequences, should they be released, in this
  format), beside the generated one.
* :func:`write_xlsx`: applies the actions one by one through openpyxl's own API (cell
  values, ``Font``/``PatternFill``/``Alignment``/``Border``, ``merge_cells``/
  ``unmerge_cells``), never through the state model, and saves the workbook; what openpyxl
  makes of merges (covered cells cleared, their styles dropped on reload) is openpyxl's.
* :func:`read_xlsx` / :func:`xlsx_mismatches`: the workbook read back with
  ``openpyxl.load_workbook`` as a state, and the number of properties and merges in which
  it differs from the state model's (the study's ``xlsx_mismatches``, which must be 0).
  Covered cells of a merged range are read as holding nothing (openpyxl's ``MergedCell``;
  the anchor's outline it copies onto edge cells is display only). Numbers a workbook
  cannot hold exactly (more than 15 significant digits) would count as mismatches.

openpyxl (3.1.5, the ``spreadsheet`` extra) is imported only by the xlsx functions.
"""

from __future__ import annotations

from collections.abc import Iterable
from copy import copy
from pathlib import Path
from typing import Any

from ...errors import DataError, MissingDataError
from .actions import Action, format_action, parse_action
from .state import _DEFAULT, PROPS, SheetState


# --------------------------------------------------------------------------- text files
def write_trajectory(actions: Iterable[Action], path: str | Path) -> None:
    """Write one action per line (with a final newline)."""
    Path(path).write_text("".join(format_action(a) + "\n" for a in actions), encoding="utf-8")


def read_trajectories(folder: str | Path) -> dict[str, list[Action]]:
    """Every ``*.txt`` trajectory in ``folder``, by file stem, in name order. Each must
    parse and apply from the empty sheet; ``DataError`` names the first bad ``file:line``,
    ``MissingDataError`` a missing folder or one without ``*.txt`` files."""
    folder = Path(folder)
    if not folder.is_dir():
        raise MissingDataError(f"{folder}: no such folder of trajectories (*.txt)")
    paths = sorted(folder.glob("*.txt"))
    if not paths:
        raise MissingDataError(f"{folder}: no trajectory files (*.txt, one action per line)")
    out = {}
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise DataError(f"{path}: not UTF-8 text") from None
        actions, state = [], SheetState()
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                action = parse_action(line.rstrip("\r"))
                state._apply(action)
            except DataError as exc:
                raise DataError(f"{path}:{number}: {exc}") from None
            actions.append(action)
        out[path.stem] = actions
    return out


# --------------------------------------------------------------------------- workbooks
def _openpyxl() -> Any:
    try:
        import openpyxl
    except ModuleNotFoundError:
        raise ModuleNotFoundError("the .xlsx functions need openpyxl: "
                                  "pip install 'raystudy[spreadsheet]'") from None
    return openpyxl


def _argb(color: str) -> str:
    return "FF" + color[1:]


def _apply_openpyxl(ws: Any, action: Action) -> None:
    from openpyxl.styles import Border, PatternFill, Side
    from openpyxl.worksheet.cell_range import CellRange

    if action.kind == "MERGE":
        wanted = CellRange(action.target)
        merged = list(ws.merged_cells.ranges)
        if action.value:
            if any(m.coord == wanted.coord for m in merged):
                return
            clash = next((m for m in merged if not m.isdisjoint(wanted)), None)
            if clash is not None:
                raise DataError(f"{format_action(action)}: overlaps the merged range {clash}")
            ws.merge_cells(wanted.coord)
        else:
            for m in merged:
                if not m.isdisjoint(wanted):
                    ws.unmerge_cells(m.coord)
        return
    if action.kind == "INPUT":
        try:
            ws[action.target].value = action.value
        except AttributeError:     # openpyxl: "'MergedCell' object attribute 'value' is read-only"
            raise DataError(f"{format_action(action)}: a covered cell of a merged range") from None
        return
    r1, c1, r2, c2 = action.box
    for row in ws.iter_rows(min_row=r1, max_row=r2, min_col=c1, max_col=c2):
        for cell in row:
            if action.kind in ("FONT_BOLD", "FONT_ITALIC", "FONT_COLOR"):
                font = copy(cell.font)
                if action.kind == "FONT_BOLD":
                    font.b = action.value
                elif action.kind == "FONT_ITALIC":
                    font.i = action.value
                else:
                    font.color = _argb(action.value)
                cell.font = font
            elif action.kind == "FILL_COLOR":
                cell.fill = PatternFill(fill_type="solid", fgColor=_argb(action.value))
            elif action.kind == "NUMBER_FORMAT":
                cell.number_format = action.value
            elif action.kind == "ALIGN":
                alignment = copy(cell.alignment)
                alignment.horizontal = action.value
                cell.alignment = alignment
            else:
                side = Side(style=action.value[0], color=_argb(action.value[1]))
                cell.border = Border(left=side, right=side, top=side, bottom=side)


def write_xlsx(actions: Iterable[Action], path: str | Path) -> None:
    """Apply ``actions`` to a new workbook through openpyxl and save it at ``path``."""
    openpyxl = _openpyxl()
    workbook = openpyxl.Workbook()
    for action in actions:
        _apply_openpyxl(workbook.active, action)
    workbook.save(path)


def _rgb(color: Any) -> str | None:
    if color is None or color.type != "rgb":
        return None                     # the default (theme) colour
    return "#" + str(color.rgb)[-6:].upper()


def _border(border: Any) -> tuple[str, ...] | None:
    sides = [border.left, border.right, border.top, border.bottom]
    styles = {(s.style, _rgb(s.color)) if s is not None and s.style else None for s in sides}
    if styles == {None}:
        return None
    (only,) = styles if len(styles) == 1 else (None,)
    if only is not None:
        return str(only[0]), str(only[1])
    return ("mixed",) + tuple(sorted(str(s) for s in styles))


def cell_props(cell: Any) -> dict[str, Any]:
    """The eight :data:`~.state.PROPS` of an openpyxl cell, as the state model holds them."""
    fill = cell.fill
    if fill is None or fill.fill_type is None:
        fill_color = None
    elif fill.fill_type == "solid":
        fill_color = _rgb(fill.fgColor)
    else:
        fill_color = f"pattern:{fill.fill_type}"
    return {"value": cell.value, "bold": bool(cell.font.b), "italic": bool(cell.font.i),
            "font_color": _rgb(cell.font.color), "fill": fill_color,
            "number_format": cell.number_format, "align": cell.alignment.horizontal,
            "border": _border(cell.border)}


def read_xlsx(path: str | Path) -> SheetState:
    """The active sheet of the workbook at ``path`` as a state (covered cells hold
    nothing; see the module docstring)."""
    openpyxl = _openpyxl()
    from openpyxl.cell.cell import MergedCell

    ws = openpyxl.load_workbook(path).active
    state = SheetState()
    for row in ws.iter_rows():
        for cell in row:
            if isinstance(cell, MergedCell):
                continue
            props = cell_props(cell)
            values = tuple(props[p] for p in PROPS)
            if values != _DEFAULT:
                state._cells[(cell.row, cell.column)] = values
    for merged in ws.merged_cells.ranges:
        box = (merged.min_row, merged.min_col, merged.max_row, merged.max_col)
        state._merged[merged.coord] = box
        for r in range(box[0], box[2] + 1):
            for c in range(box[1], box[3] + 1):
                if (r, c) != box[:2]:
                    state._covered[(r, c)] = merged.coord
    return state


def xlsx_mismatches(state: SheetState, path: str | Path) -> int:
    """How many cell properties and merged ranges differ between ``state`` and the
    workbook at ``path`` read back by openpyxl (0: the state model matches openpyxl)."""
    return len(state.diff(read_xlsx(path)))

