r"""NAPE's online evaluation, as raystudy reads it: predictions reshape what the user still
has to do, and a prediction is judged by the sheet state it produces.

NAPE (Agrawal et al., arXiv 2606.13802; napeval.github.io) "expects a prediction after
each user action, accepts or rejects it, updates the future actions on acceptance, until
the target sheet is reached", and scores "on the resulting workbook state". Its exact
acceptance rule is not public; **raystudy's reading** is :func:`accepts`. For a trajectory
:math:`a_1..a_n` with target :math:`T = \mathrm{apply}(a_1..a_n)` the loop is exactly::

    state = empty; history = []; remaining = trajectory
    while remaining:
        the user performs remaining.pop(0): state, history updated; user_actions += 1
        drop from remaining every action that no longer changes the state
        while remaining and (trigger is None or trigger(history)):
            calls += 1; s = predictor(history, state, k)[:k]
            if not s: abstained += 1; break
            if not accept(s): rejected += 1; break
            accepted += 1; apply s to state; history += s; drop satisfied actions
            if not repredict: break
    saved = n - user_actions;  saved_rate = saved / n

* ``acceptance="state"`` (:func:`accepts`): applying :math:`s` to the state :math:`S`
  changes at least one property or merge, and every property it changes (net, over all of
  :math:`s`) takes its value in :math:`T`: nothing is overwritten, nothing is wrong, and
  the :math:`k` actions of a multi-action suggestion are accepted all or none.
* ``acceptance="next_action"``: the exact-match baseline, :math:`s` must equal the next
  :math:`|s|` remaining actions.

"Satisfied" actions are those that no longer change the state; a remaining action that
cannot be applied to it any more (``INPUT`` into a cell a suggestion has merged over) is
dropped with them. With a *monotone* trajectory (every action sets properties to their
final values, as :func:`~.generator.generate_trajectory` makes) the loop ends on the
target; a trajectory that overwrites its own values can end elsewhere, which
:attr:`OnlineResult.reached` reports. Triggers (:func:`make_trigger`) decide when the
predictor is called; NAPE's are not public, and ``cheap`` is raystudy's reading.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence

from ...errors import ConfigError, DataError
from .actions import FORMAT_KINDS, Action
from .state import SheetState, apply_actions

Predictor = Callable[[Sequence[Action], SheetState, int], list[Action]]
"""``predictor(history, state, k)``: at most ``k`` actions; an empty list abstains."""
Trigger = Callable[[Sequence[Action]], bool]
"""``trigger(history)``: whether to call the predictor now."""

ACCEPTANCES: tuple[str, ...] = ("state", "next_action")
TRIGGERS: tuple[str, ...] = ("always", "cheap", "every_n")


# --------------------------------------------------------------------------- acceptance
def accepts(state: SheetState, suggestion: Sequence[Action], target: SheetState) -> bool:
    """raystudy's state-based acceptance: ``suggestion`` (applied in order to ``state``)
    changes at least one property or merge, and every property or merge it changes ends at
    its value in ``target``. A suggestion that cannot be applied is not accepted."""
    after = state._copy()
    try:
        for action in suggestion:
            after._apply(action)
    except DataError:
        return False
    changed = state.diff(after)
    if not changed:
        return False
    for ref, prop in changed:
        if prop == "merge":
            if (ref in after.merged) != (ref in target.merged):
                return False
        elif after.props(ref)[prop] != target.props(ref)[prop]:
            return False
    return True


def _pending(state: SheetState, trajectory: Sequence[Action], remaining: list[int]) -> list[int]:
    """The remaining actions (indices) that still change the state."""
    kept = []
    for i in remaining:
        try:
            if state.changes(trajectory[i]):
                kept.append(i)
        except DataError:
            pass                               # cannot be applied any more: dropped
    return kept


# --------------------------------------------------------------------------- the loop
@dataclasses.dataclass(frozen=True)
class OnlineResult:
    """Counts of one online evaluation (see the module docstring).

    ``saved_rate = saved / len(trajectory)`` (0 for an empty one). Beside the issue's
    seven fields: ``reached`` (the final state equals the target) and ``saved_by_kind``
    (how many of the trajectory's actions of each kind the user did not perform).
    """

    user_actions: int
    saved: int
    accepted: int
    rejected: int
    abstained: int
    calls: int
    saved_rate: float
    reached: bool = True
    saved_by_kind: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def length(self) -> int:
        """``len(trajectory)``."""
        return self.user_actions + self.saved

    @property
    def shown(self) -> int:
        """Suggestions shown to the user: ``accepted + rejected``."""
        return self.accepted + self.rejected


def online_evaluate(trajectory: Sequence[Action], predictor: Predictor, *, k: int = 1,
                    trigger: Trigger | None = None, repredict: bool = True,
                    acceptance: str = "state") -> OnlineResult:
    """Run the online loop of the module docstring on one trajectory.

    Args:
        trajectory: the user's actions, in order (their final state is the target).
        predictor: ``predictor(history, state, k) -> list[Action]`` (empty: abstain);
            only the first ``k`` actions it returns are shown.
        k: actions per suggestion (default 1, NAPE's single-action mode).
        trigger: ``trigger(history) -> bool`` (default None: call after every change).
        repredict: after an accepted suggestion, ask again at once (default True, NAPE's
            "k=1, re-predict"); False waits for the next user action.
        acceptance: ``"state"`` (default, :func:`accepts`) or ``"next_action"``.
    """
    if not isinstance(k, int) or k < 1:
        raise ConfigError(f"k={k!r} must be a positive integer")
    if acceptance not in ACCEPTANCES:
        raise ConfigError(f"acceptance={acceptance!r}; choose one of {', '.join(ACCEPTANCES)}")
    trajectory = list(trajectory)
    target = apply_actions(trajectory)
    state, history = SheetState(), []
    remaining = list(range(len(trajectory)))
    performed: Counter[str] = Counter()
    user_actions = accepted = rejected = abstained = calls = 0
    while remaining:
        action = trajectory[remaining.pop(0)]
        state._apply(action)
        history.append(action)
        performed[action.kind] += 1
        user_actions += 1
        remaining = _pending(state, trajectory, remaining)
        while remaining and (trigger is None or trigger(history)):
            calls += 1
            suggestion = list(predictor(tuple(history), state, k))[:k]
            if not all(isinstance(a, Action) for a in suggestion):
                raise TypeError(f"the predictor returned {suggestion!r}, not a list of Actions")
            if not suggestion:
                abstained += 1
                break
            if acceptance == "state":
                ok = accepts(state, suggestion, target)
            else:
                ok = suggestion == [trajectory[i] for i in remaining[:len(suggestion)]]
            if not ok:
                rejected += 1
                break
            accepted += 1
            for suggested in suggestion:
                state._apply(suggested)
            history += suggestion
            remaining = _pending(state, trajectory, remaining)
            if not repredict:
                break
    saved = len(trajectory) - user_actions
    by_kind = Counter(a.kind for a in trajectory)
    by_kind.subtract(performed)
    return OnlineResult(user_actions=user_actions, saved=saved, accepted=accepted,
                        rejected=rejected, abstained=abstained, calls=calls,
                        saved_rate=saved / len(trajectory) if trajectory else 0.0,
                        reached=state == target,
                        saved_by_kind={kind: n for kind, n in sorted(by_kind.items()) if n})


# --------------------------------------------------------------------------- triggers
def _continues(before: Action, after: Action) -> bool:
    """``after``'s cell is the next one of ``before``'s in its row or column (either way)."""
    (r0, c0), (r1, c1) = before.box[:2], after.box[:2]
    return abs(r1 - r0) + abs(c1 - c0) == 1


def make_trigger(name: str, **options: int) -> Trigger:
    """A trigger by name (raystudy's reading; NAPE's are not public):

    * ``always``: call after every change (the same as ``trigger=None``).
    * ``cheap``: call after a format action (any kind but ``INPUT``, :data:`FORMAT_KINDS`)
      or at the end of an INPUT run. A trigger sees only the past, so a run of INPUTs
      (consecutive cells of one row or column) is known to have ended at the first INPUT
      that does not continue it; that INPUT fires the trigger.
    * ``every_n`` (option ``n``, default 2): call when ``len(history)`` is a multiple of
      ``n`` (accepted suggestions count as history).
    """
    if name == "always" and not options:
        return _always
    if name == "cheap" and not options:
        return _cheap
    if name == "every_n" and set(options) <= {"n"}:
        n = options.get("n", 2)
        if not isinstance(n, int) or n < 1:
            raise ConfigError(f"every_n: n={n!r} must be a positive integer")
        return _EveryN(n)
    if name not in TRIGGERS:
        raise ConfigError(f"unknown trigger {name!r}; triggers: {', '.join(TRIGGERS)}")
    valid = "n" if name == "every_n" else "none"
    raise ConfigError(f"trigger {name}: unknown options {sorted(options)}; valid: {valid}")


def _always(history: Sequence[Action]) -> bool:
    return True


def _cheap(history: Sequence[Action]) -> bool:
    if not history:
        return False
    last = history[-1]
    if last.kind in FORMAT_KINDS:
        return True
    return (len(history) >= 2 and history[-2].kind == "INPUT"
            and not _continues(history[-2], last))


@dataclasses.dataclass(frozen=True)
class _EveryN:
    n: int

    def __call__(self, history: Sequence[Action]) -> bool:
        return len(history) % self.n == 0
