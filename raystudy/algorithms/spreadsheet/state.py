r"""The sheet state that actions produce: raystudy's reading of NAPE's "workbook state".

NAPE scores a prediction "on the resulting workbook state -- different action sequences
can reach the same sheet" (napeval.github.io). The state here is one sheet: for each cell
:math:`c` the eight properties of :data:`PROPS` and the set of merged ranges,

.. math::
    S = \bigl(\{p(c)\}_{c,\ p \in P},\ M\bigr), \qquad
    P = (\text{value, bold, italic, font\_color, fill, number\_format, align, border}),

with the defaults of :data:`DEFAULTS` (``value`` None, ``bold``/``italic`` False, colours,
fill, ``align`` and ``border`` None, ``number_format`` ``"General"``); ``border`` is
``(style, "#RRGGBB")`` for all four sides, style lower case. An action sets one property
of every cell of its target (``INPUT`` sets ``value``); ``MERGE`` adds or removes ranges of
:math:`M`. Merges follow Excel and openpyxl 3.1.5 after a save and reload:

* ``MERGE | R | true`` keeps the top-left cell (the *anchor*) and clears every other cell of
  R (the *covered* cells) to all defaults: openpyxl replaces them by empty ``MergedCell``
  objects, Excel keeps only the upper-left value. Merging R again is no change; a range
  that overlaps another merged range raises ``DataError`` (Excel would silently widen the
  selection; raystudy's reading refuses).
* A covered cell holds no properties of its own: ``INPUT`` into it raises ``DataError``
  (openpyxl: "'MergedCell' object attribute 'value' is read-only"), and a format action
  leaves it unchanged (openpyxl keeps such a style in memory only; the reloaded workbook
  has none). So formatting a merged ``A1:D1`` formats its anchor ``A1``.
* ``MERGE | R | false`` unmerges every merged range that meets R (Excel's Unmerge on a
  selection); the formerly covered cells stay at their defaults.

``props(ref)`` of a covered cell is therefore all defaults. (openpyxl also draws the
anchor's outline on covered edge cells when it loads a file; that copy is display only and
not a property here.) Numbers are kept exactly, and ``1 == 1.0`` as in a workbook, which
stores both as the same double.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...errors import DataError
from .actions import (
    Action,
    Box,
    Cell,
    box_cells,
    box_ref,
    boxes_intersect,
    cell_ref,
    format_action,
    parse_cell,
)

PROPS: tuple[str, ...] = ("value", "bold", "italic", "font_color", "fill", "number_format",
                          "align", "border")
DEFAULTS: dict[str, Any] = {"value": None, "bold": False, "italic": False, "font_color": None,
                            "fill": None, "number_format": "General", "align": None,
                            "border": None}
PROP_OF_KIND: dict[str, str] = {"INPUT": "value", "FONT_BOLD": "bold", "FONT_ITALIC": "italic",
                                "FONT_COLOR": "font_color", "FILL_COLOR": "fill",
                                "NUMBER_FORMAT": "number_format", "ALIGN": "align",
                                "BORDER_ALL": "border"}
"""The property each non-MERGE kind sets."""

MAX_RANGE_CELLS = 1 << 16
"""Largest target the state model accepts (it holds cells one by one)."""

_DEFAULT = tuple(DEFAULTS[p] for p in PROPS)
_INDEX = {p: i for i, p in enumerate(PROPS)}


class SheetState:
    """One sheet's cell properties and merged ranges; see the module docstring.

    ``SheetState()`` is the empty sheet. States have no public mutators: use
    :func:`apply_actions`, which returns a new state. ``==`` compares every property of
    every cell and the merged ranges.
    """

    __slots__ = ("_cells", "_merged", "_covered")

    def __init__(self) -> None:
        self._cells: dict[Cell, tuple] = {}      # cells with a non-default property
        self._merged: dict[str, Box] = {}        # "A1:D1" -> its rectangle
        self._covered: dict[Cell, str] = {}      # covered cell -> its merged range

    # ------------------------------------------------------------------ reading
    def props(self, ref: str) -> dict[str, Any]:
        """The eight properties of cell ``ref`` (``"B3"``), defaults included."""
        return dict(zip(PROPS, self._cells.get(parse_cell(ref), _DEFAULT), strict=True))

    @property
    def merged(self) -> frozenset[str]:
        """The merged ranges, as ``"A1:D1"`` texts."""
        return frozenset(self._merged)

    def merge_of(self, ref: str) -> str | None:
        """The merged range that covers ``ref`` or has it as anchor, else None."""
        cell = parse_cell(ref)
        if cell in self._covered:
            return self._covered[cell]
        return next((rng for rng, box in self._merged.items() if box[:2] == cell), None)

    def cells(self) -> list[str]:
        """References of the cells with a non-default property, row by row."""
        return [cell_ref(*cell) for cell in sorted(self._cells)]

    def diff(self, other: SheetState) -> list[tuple[str, str]]:
        """``(ref, prop)`` for every property that differs between the two states, row by
        row, then ``(range, "merge")`` for every range merged in only one of them."""
        out = []
        for cell in sorted(self._cells.keys() | other._cells.keys()):
            mine, theirs = self._cells.get(cell, _DEFAULT), other._cells.get(cell, _DEFAULT)
            if mine != theirs:
                out += [(cell_ref(*cell), p)
                        for p, a, b in zip(PROPS, mine, theirs, strict=True) if a != b]
        return out + [(rng, "merge") for rng in sorted(self._merged.keys() ^ other._merged.keys())]

    def changes(self, action: Action) -> bool:
        """Whether applying ``action`` would change this state; ``DataError`` where it
        cannot be applied (``INPUT`` into a covered cell, an overlapping ``MERGE``)."""
        box = action.box
        if action.kind == "MERGE":
            if not action.value:
                return any(boxes_intersect(box, other) for other in self._merged.values())
            conflict = self._merge_conflict(action, box)
            if conflict:
                raise DataError(conflict)
            return conflict is None
        self._check_size(action, box)
        i = _INDEX[PROP_OF_KIND[action.kind]]
        if action.kind == "INPUT":
            self._check_uncovered(action, box[:2])
        return any(self._cells.get(cell, _DEFAULT)[i] != action.value
                   for cell in box_cells(box) if cell not in self._covered)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SheetState):
            return NotImplemented
        return self._cells == other._cells and self._merged.keys() == other._merged.keys()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SheetState({len(self._cells)} cells set, merged={sorted(self._merged)})"

    # ------------------------------------------------------------------ writing (private)
    def _copy(self) -> SheetState:
        new = SheetState()
        new._cells, new._merged, new._covered = (dict(self._cells), dict(self._merged),
                                                 dict(self._covered))
        return new

    def _apply(self, action: Action) -> None:
        box = action.box
        if action.kind == "MERGE":
            self._apply_merge(action, box)
            return
        self._check_size(action, box)
        i = _INDEX[PROP_OF_KIND[action.kind]]
        if action.kind == "INPUT":
            self._check_uncovered(action, box[:2])
        for cell in box_cells(box):
            if cell in self._covered:
                continue                       # a covered cell holds no properties
            old = self._cells.get(cell, _DEFAULT)
            new = old[:i] + (action.value,) + old[i + 1:]
            if new == _DEFAULT:
                self._cells.pop(cell, None)
            else:
                self._cells[cell] = new

    def _apply_merge(self, action: Action, box: Box) -> None:
        if not action.value:
            for rng in [rng for rng, other in self._merged.items() if boxes_intersect(box, other)]:
                del self._merged[rng]
                self._covered = {c: r for c, r in self._covered.items() if r != rng}
            return
        conflict = self._merge_conflict(action, box)
        if conflict:
            raise DataError(conflict)
        if conflict is not None:
            return                            # merged already: no change
        rng = box_ref(box)
        self._merged[rng] = box
        for cell in box_cells(box):
            if cell != box[:2]:
                self._cells.pop(cell, None)   # Excel keeps the upper-left value only
                self._covered[cell] = rng

    def _merge_conflict(self, action: Action, box: Box) -> str | None:
        """None if merging ``box`` is a change; "" if it is merged already; else why not."""
        if box_ref(box) in self._merged:
            return ""
        for rng, other in self._merged.items():
            if boxes_intersect(box, other):
                return (f"{_line(action)}: {action.target} overlaps the merged range {rng} "
                        "(unmerge it first)")
        return None

    def _check_uncovered(self, action: Action, cell: Cell) -> None:
        if cell in self._covered:
            rng = self._covered[cell]
            raise DataError(f"{_line(action)}: {action.target} is covered by the merged range "
                            f"{rng}; only its top-left cell {rng.split(':')[0]} holds a value")

    @staticmethod
    def _check_size(action: Action, box: Box) -> None:
        if (box[2] - box[0] + 1) * (box[3] - box[1] + 1) > MAX_RANGE_CELLS:
            raise DataError(f"{_line(action)}: more than {MAX_RANGE_CELLS} cells")


def _line(action: Action) -> str:
    return format_action(action)


def apply_actions(actions: Iterable[Action], state: SheetState | None = None) -> SheetState:
    """The state after ``actions``, applied in order to ``state`` (default: the empty
    sheet). Returns a new state; ``state`` and ``actions`` are unchanged. Raises
    ``DataError`` naming the first action that cannot be applied."""
    new = SheetState() if state is None else state._copy()
    for action in actions:
        new._apply(action)
    return new
