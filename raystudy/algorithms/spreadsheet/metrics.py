r"""The study's metrics of next-action prediction (raystudy's reading of NAPE's analyses:
"saved actions, false positives, efficiency").

Over a set of evaluated sheets :math:`i` with :class:`~.online.OnlineResult` counts
(``n_i`` actions, ``u_i`` performed by the user, ``a_i`` accepted, ``r_i`` rejected, ``q_i``
predictor calls), :func:`summarize` pools the counts before dividing:

* ``saved_rate`` :math:`= \sum_i (n_i - u_i) / \sum_i n_i` (NAPE's headline, "saving ~27%
  of user actions");
* ``net_saved_rate`` :math:`= \sum_i (n_i - u_i - r_i) / \sum_i n_i` (saved minus
  rejected suggestions, each rejection costing the user one look);
* ``rejected_per_shown`` :math:`= \sum_i r_i / \sum_i (a_i + r_i)` (false positives per
  shown suggestion; 0 when none was shown);
* ``calls_per_user_action`` :math:`= \sum_i q_i / \sum_i u_i` (efficiency);
* ``abstained_per_call`` :math:`= \sum_i \text{abstained}_i / \sum_i q_i`.

:func:`offline_accuracy` is the offline counterpart: after every prefix of a trajectory
(the user's own actions, no suggestions), whether the predictor's single action equals the
true next one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .actions import Action
from .online import OnlineResult, Predictor
from .state import SheetState


def summarize(results: Iterable[OnlineResult]) -> dict[str, float]:
    """Pooled rates over sheets (module docstring), plus the pooled counts ``actions``,
    ``user_actions``, ``saved``, ``accepted``, ``rejected``, ``abstained``, ``calls``."""
    results = list(results)
    total = {name: sum(getattr(r, name) for r in results)
             for name in ("user_actions", "saved", "accepted", "rejected", "abstained",
                          "calls")}
    n = total["user_actions"] + total["saved"]
    shown = total["accepted"] + total["rejected"]
    return {
        "saved_rate": total["saved"] / n if n else 0.0,
        "net_saved_rate": (total["saved"] - total["rejected"]) / n if n else 0.0,
        "rejected_per_shown": total["rejected"] / shown if shown else 0.0,
        "calls_per_user_action": (total["calls"] / total["user_actions"]
                                  if total["user_actions"] else 0.0),
        "abstained_per_call": total["abstained"] / total["calls"] if total["calls"] else 0.0,
        "actions": float(n), **{name: float(v) for name, v in total.items()},
    }


def offline_accuracy(predictor: Predictor, trajectories: Iterable[Sequence[Action]]) -> float:
    r"""Fraction of positions :math:`t \ge 1` (after the first action) of every trajectory
    where ``predictor(a_1..a_t, state_t, 1)`` is exactly ``[a_{t+1}]``; an abstention counts
    as a miss. 0 when there is no such position."""
    hits = positions = 0
    for trajectory in trajectories:
        trajectory = list(trajectory)
        state = SheetState()
        for t, action in enumerate(trajectory[:-1], start=1):
            state._apply(action)
            hits += list(predictor(tuple(trajectory[:t]), state, 1))[:1] == [trajectory[t]]
            positions += 1
    return hits / positions if positions else 0.0
