r"""Next-action predictors: NAPE's "classical models" and "fine-tuned SLMs" tiers, as raystudy
builds them on generated sheets (NAPE's own baselines are not public).

Every predictor is called as ``predictor(history, state, k) -> list[Action]`` with the
actions so far (the user's and the accepted suggestions), the current
:class:`~.state.SheetState` and the number of actions wanted; an empty list abstains.
:func:`make_predictor` builds one by name:

* ``repeat``: the last action once more, moved by the *stride* between it and the previous
  action of the same kind (``FONT_BOLD A2`` then ``FONT_BOLD B2`` -> ``FONT_BOLD C2``); a
  formula is copied as Excel copies it, relative references moved by the stride
  (:func:`shift_formula`). The :math:`i`-th of :math:`k` actions moves :math:`i` strides.
  Abstains with no such pair or a zero stride. No look at the state: the naive baseline.
* ``fill_pattern``: Excel's fill handle. If the last three INPUTs are in consecutive cells
  :math:`c, c+u, c+2u` of one row or column (:math:`u` a unit step) and hold numbers
  :math:`v_1, v_2, v_3` with :math:`v_2 - v_1 = v_3 - v_2 = d` (decimal arithmetic, so
  0.1, 0.2, 0.3 continues with 0.4), predict :math:`v_3 + i d` in :math:`c + (2+i) u` for
  :math:`i = 1..k`; otherwise abstain.
* ``ngram``: an :math:`n`-gram model (default :math:`n = 3`) with back-off over action
  tokens (:func:`action_tokens`): the next token is the most frequent continuation of the
  longest context of the last :math:`n-1` tokens seen in training ("stupid back-off": the
  first seen context wins, no discounting), with probability :math:`p = c(h, t)/c(h)`.
* ``transformer``: the project's :class:`~raystudy.algorithms.models.GPT` trained on the
  token sequences of training sheets (disjoint from the test ones: the caller's choice of
  seeds); see :mod:`.transformer`.
* ``oracle``: the next ``k`` actions of the user's own trajectory (option ``trajectory``)
  that still change the state: the upper bound.

The learned ones (``ngram``, ``transformer``) take ``threshold`` (default 0): abstain when the
top token's probability is below it. A token is

.. math::
    t_i = (\text{kind}_i,\ \Delta r_i,\ \Delta c_i,\ \text{class}_i),

:math:`(\Delta r_i, \Delta c_i)` the move of the target's top-left cell from the previous
action's (from ``A1`` for the first), clipped to :math:`\pm 8`; the class is ``text``,
``number`` or ``formula`` for INPUT, and the target's shape with the value
(``"1x5:true"``) for the other kinds. A predicted token becomes an action (*realised*) with
the shape and value it names; an INPUT ``formula`` copies the last formula of the history
to the new cell (:func:`shift_formula`); an INPUT ``number`` continues the arithmetic
progression of the three cells above it (or else to its left) in the state; ``text`` and
anything that cannot be written, leaves the sheet, or would not change the state is not
realised, and the predictor abstains. Multi-action suggestions are rolled out greedily,
each step realised on the state the previous ones leave.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from ...errors import ConfigError, DataError
from .actions import (
    MAX_COL,
    MAX_ROW,
    Action,
    box_ref,
    cell_ref,
    column_letters,
    format_value,
    parse_action,
    parse_cell,
)
from .state import SheetState

PREDICTORS: tuple[str, ...] = ("repeat", "fill_pattern", "ngram", "transformer", "oracle")
DELTA_CLIP = 8
BOS: tuple = ("BOS",)
"""The context padding token (before the first action)."""

Token = tuple
"""``(kind, d_row, d_col, value_class)``."""

_REF = re.compile(r"(?<![A-Za-z0-9_$.])(\$?)([A-Z]{1,3})(\$?)([0-9]+)(?![0-9A-Za-z_(])")


# --------------------------------------------------------------------------- helpers
def shift_formula(formula: str, d_row: int, d_col: int) -> str | None:
    """Copy a formula ``d_row`` rows and ``d_col`` columns on, as Excel does: relative
    references move, ``$``-fixed parts and text in double quotes do not. None if a
    reference would leave the sheet."""
    def move(match: re.Match) -> str:
        fix_col, letters, fix_row, digits = match.groups()
        row, col = parse_cell(f"{letters}{digits}")
        row, col = row + (0 if fix_row else d_row), col + (0 if fix_col else d_col)
        if not (1 <= row <= MAX_ROW and 1 <= col <= MAX_COL):
            raise DataError("off the sheet")
        return f"{fix_col}{column_letters(col)}{fix_row}{row}"

    parts = formula.split('"')
    try:
        parts[::2] = [_REF.sub(move, part) for part in parts[::2]]
    except DataError:
        return None
    return '"'.join(parts)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def progression(values: Sequence[Any], count: int) -> list[int | float] | None:
    """The next ``count`` terms of ``values`` if they are numbers in arithmetic progression
    (differences equal in decimal arithmetic), else None. Integers stay integers."""
    if len(values) < 2 or not all(_is_number(v) for v in values):
        return None
    exact = [Decimal(repr(v)) for v in values]
    steps = {b - a for a, b in zip(exact, exact[1:], strict=False)}
    if len(steps) != 1:
        return None
    (step,) = steps
    as_int = all(isinstance(v, int) for v in values)
    terms = [exact[-1] + step * i for i in range(1, count + 1)]
    return [int(t) if as_int else float(t) for t in terms]


def _shifted(action: Action, d_row: int, d_col: int) -> Action | None:
    r1, c1, r2, c2 = action.box
    box = (r1 + d_row, c1 + d_col, r2 + d_row, c2 + d_col)
    if min(box) < 1 or box[2] > MAX_ROW or box[3] > MAX_COL:
        return None
    value = action.value
    if action.kind == "INPUT" and isinstance(value, str) and value.startswith("="):
        value = shift_formula(value, d_row, d_col)
        if value is None:
            return None
    return Action(action.kind, box_ref(box), value)


def _value_class(action: Action) -> str:
    if action.kind == "INPUT":
        if isinstance(action.value, str):
            return "formula" if action.value.startswith("=") else "text"
        return "number"
    r1, c1, r2, c2 = action.box
    return f"{r2 - r1 + 1}x{c2 - c1 + 1}:{format_value(action.kind, action.value)}"


def _clip(d: int) -> int:
    return max(-DELTA_CLIP, min(DELTA_CLIP, d))


def action_token(action: Action, previous: Action | None) -> Token:
    """The token of ``action`` after ``previous`` (None: the first action)."""
    r0, c0 = previous.box[:2] if previous is not None else (1, 1)
    r, c = action.box[:2]
    return action.kind, _clip(r - r0), _clip(c - c0), _value_class(action)


def action_tokens(actions: Sequence[Action]) -> list[Token]:
    """The token of every action of a trajectory (module docstring)."""
    return [action_token(a, actions[i - 1] if i else None) for i, a in enumerate(actions)]


def last_tokens(history: Sequence[Action], m: int) -> list[Token]:
    """The tokens of the last ``m`` actions of ``history``, :data:`BOS`-padded to ``m``."""
    start = max(0, len(history) - m)
    tokens = [action_token(history[i], history[i - 1] if i else None)
              for i in range(start, len(history))]
    return [BOS] * (m - len(tokens)) + tokens


def realise(token: Token, history: Sequence[Action], state: SheetState) -> Action | None:
    """The action ``token`` names after ``history`` in ``state``, or None (see the module
    docstring: text, off the sheet, not writable, or no change)."""
    if token == BOS or len(token) != 4:
        return None
    kind, d_row, d_col, value_class = token
    r0, c0 = history[-1].box[:2] if history else (1, 1)
    row, col = r0 + d_row, c0 + d_col
    if not (1 <= row <= MAX_ROW and 1 <= col <= MAX_COL):
        return None
    action: Action | None
    try:
        if kind == "INPUT":
            value = _input_value(value_class, row, col, history, state)
            action = None if value is None else Action("INPUT", cell_ref(row, col), value)
        else:
            shape, _, text = value_class.partition(":")
            height, width = (int(n) for n in shape.split("x"))
            target = box_ref((row, col, row + height - 1, col + width - 1))
            action = parse_action(f"{kind} | {target} | {text}")
        if action is None or not state.changes(action):
            return None
    except (DataError, ValueError):
        return None
    return action


def _input_value(value_class: str, row: int, col: int, history: Sequence[Action],
                 state: SheetState) -> Any:
    if value_class == "formula":
        for earlier in reversed(history):
            if earlier.kind == "INPUT" and isinstance(earlier.value, str) \
                    and earlier.value.startswith("="):
                r, c = earlier.box[:2]
                return shift_formula(earlier.value, row - r, col - c)
        return None
    if value_class == "number":
        for dr, dc in ((1, 0), (0, 1)):         # the column above, else the row to the left
            cells = [(row - dr * i, col - dc * i) for i in (3, 2, 1)]
            if min(min(cell) for cell in cells) < 1:
                continue
            values = [state.props(cell_ref(*cell))["value"] for cell in cells]
            terms = progression(values, 1)
            if terms is not None:
                return terms[0]
    return None


# --------------------------------------------------------------------------- predictors
class RepeatPredictor:
    """``repeat``: the last action moved by its stride (module docstring)."""

    def __call__(self, history: Sequence[Action], state: SheetState, k: int) -> list[Action]:
        if not history:
            return []
        last = history[-1]
        before = next((a for a in reversed(history[:-1]) if a.kind == last.kind), None)
        if before is None:
            return []
        d_row, d_col = (x - y for x, y in zip(last.box[:2], before.box[:2], strict=True))
        if (d_row, d_col) == (0, 0):
            return []
        out = []
        for i in range(1, k + 1):
            moved = _shifted(last, i * d_row, i * d_col)
            if moved is None:
                break
            out.append(moved)
        return out


class FillPatternPredictor:
    """``fill_pattern``: continue an arithmetic progression of the last three INPUTs in
    consecutive cells of one row or column (module docstring)."""

    def __call__(self, history: Sequence[Action], state: SheetState, k: int) -> list[Action]:
        inputs = [a for a in history if a.kind == "INPUT"][-3:]
        if len(inputs) < 3:
            return []
        cells = [a.box[:2] for a in inputs]
        steps = {(b[0] - a[0], b[1] - a[1]) for a, b in zip(cells, cells[1:], strict=False)}
        if len(steps) != 1 or next(iter(steps)) not in ((0, 1), (1, 0), (0, -1), (-1, 0)):
            return []
        (d_row, d_col), (row, col) = next(iter(steps)), cells[-1]
        terms = progression([a.value for a in inputs], k)
        if terms is None:
            return []
        out = []
        for i, term in enumerate(terms, start=1):
            r, c = row + i * d_row, col + i * d_col
            if not (1 <= r <= MAX_ROW and 1 <= c <= MAX_COL):
                break
            out.append(Action("INPUT", cell_ref(r, c), term))
        return out


class NgramPredictor:
    """``ngram``: back-off n-gram over action tokens (module docstring).

    ``counts[j][h]`` is the :class:`~collections.Counter` of the tokens that follow the
    context ``h`` (a tuple of the ``j`` previous tokens, :data:`BOS`-padded) in training.
    """

    def __init__(self, train: Sequence[Sequence[Action]], n: int = 3,
                 threshold: float = 0.0) -> None:
        if not isinstance(n, int) or n < 1:
            raise ConfigError(f"ngram: n={n!r} must be a positive integer")
        self.n, self.threshold = n, float(threshold)
        self.counts: list[dict[tuple, Counter]] = [{} for _ in range(n)]
        for trajectory in train:
            tokens = action_tokens(list(trajectory))
            padded = [BOS] * (n - 1) + tokens
            for i, token in enumerate(tokens):
                before = padded[i:i + n - 1]
                for j in range(n):
                    context = tuple(before[len(before) - j:]) if j else ()
                    self.counts[j].setdefault(context, Counter())[token] += 1

    def distribution(self, history: Sequence[Action]) -> Counter:
        """The counts of the longest seen context of ``history`` (empty if none)."""
        tokens = last_tokens(history, self.n - 1)
        for j in range(self.n - 1, -1, -1):
            context = tuple(tokens[len(tokens) - j:]) if j else ()
            if context in self.counts[j]:
                return self.counts[j][context]
        return Counter()

    def next_token(self, history: Sequence[Action]) -> tuple[Token | None, float]:
        """The most frequent continuation and its probability (None, 0 if unseen)."""
        dist = self.distribution(history)
        if not dist:
            return None, 0.0
        token, count = dist.most_common(1)[0]
        return token, count / sum(dist.values())

    def __call__(self, history: Sequence[Action], state: SheetState, k: int) -> list[Action]:
        return rollout(self.next_token, self.threshold, history, state, k)


NextToken = Callable[[list[Action]], tuple["Token | None", float]]
"""``next_token(history) -> (token or None, its probability)``."""


def rollout(next_token: NextToken, threshold: float, history: Sequence[Action],
            state: SheetState, k: int) -> list[Action]:
    """Greedy multi-action suggestion: up to ``k`` realised top tokens, each at least
    ``threshold`` likely, each on the state the previous ones leave."""
    history, out = list(history), []
    for _ in range(k):
        token, p = next_token(history)
        if token is None or p < threshold:
            break
        action = realise(token, history, state)
        if action is None:
            break
        out.append(action)
        history.append(action)
        if len(out) < k:
            state = state._copy()
            state._apply(action)
    return out


class OraclePredictor:
    """``oracle``: the next ``k`` actions of ``trajectory`` that still change the state."""

    def __init__(self, trajectory: Sequence[Action]) -> None:
        self.trajectory = list(trajectory)

    def __call__(self, history: Sequence[Action], state: SheetState, k: int) -> list[Action]:
        out = []
        for action in self.trajectory:
            try:
                if state.changes(action):
                    out.append(action)
            except DataError:
                continue
            if len(out) == k:
                break
        return out
