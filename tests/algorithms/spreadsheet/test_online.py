"""The online loop on hand-made trajectories, every count worked out by hand in the
comments: wrong value, overwrite, no-op, range suggestion, k = 2, repredict, triggers,
abstention, and the next-action baseline."""

from __future__ import annotations

import pytest

from raystudy.algorithms.spreadsheet import (
    SheetState,
    accepts,
    apply_actions,
    make_predictor,
    make_trigger,
    online_evaluate,
    parse_action,
)
from raystudy.errors import ConfigError


def A(line: str):
    return parse_action(line)


# a1..a5: the user's trajectory (monotone); its target: A1 "x" bold, A2 1 bold, A3 2
T = [A('INPUT | A1 | "x"'), A("INPUT | A2 | 1"), A("INPUT | A3 | 2"),
     A("FONT_BOLD | A1 | true"), A("FONT_BOLD | A2 | true")]


def scripted(script: dict):
    """A predictor that suggests ``script[len(history)]`` (abstains elsewhere) and records
    the history lengths it was called at."""
    def predictor(history, state, k):
        predictor.calls.append(len(history))
        return list(script.get(len(history), []))
    predictor.calls = []
    return predictor


def counts(result):
    return (result.user_actions, result.saved, result.accepted, result.rejected,
            result.abstained, result.calls)


SCRIPT = {1: [A('INPUT | A1 | "y"')],            # overwrites A1, already at its target
          2: [A("INPUT | A3 | 2")],              # right: a3
          3: [A("FONT_BOLD | A1:A2 | true")]}    # a range: a4 and a5 at once


def test_state_acceptance_overwrite_then_single_then_range_suggestion():
    p = scripted(SCRIPT)
    r = online_evaluate(T, p)
    # user a1 -> call@1 overwrite: rejected. user a2 -> call@2 accepted (a3 dropped),
    # re-predict call@3: the range sets A1 and A2 bold: accepted, a4 a5 dropped -> done.
    assert counts(r) == (2, 3, 2, 1, 0, 3)
    assert p.calls == [1, 2, 3]
    assert r.saved_rate == pytest.approx(3 / 5) and r.reached
    assert r.saved_by_kind == {"FONT_BOLD": 2, "INPUT": 1}
    assert (r.length, r.shown) == (5, 3)


def test_next_action_acceptance_takes_only_the_users_own_next_action():
    p = scripted(SCRIPT)
    r = online_evaluate(T, p, acceptance="next_action")
    # call@1 rejected; call@2 == a3 accepted; call@3 (range) != a4: rejected.
    # user a4 -> call@4 abstains; user a5 -> done.
    assert counts(r) == (4, 1, 1, 2, 1, 4)
    assert p.calls == [1, 2, 3, 4]


def test_next_action_with_k_2_needs_the_next_two_actions_in_order():
    pair = {1: [T[1], T[3]]}                    # a2 and a4: right values, not a2 then a3
    exact = online_evaluate(T, scripted(pair), k=2, acceptance="next_action")
    # call@1 rejected; users a2..a5, calls @2 @3 @4 abstain
    assert counts(exact) == (5, 0, 0, 1, 3, 4)
    by_state = online_evaluate(T, scripted(pair), k=2)
    # call@1 accepted (a2, a4 dropped), call@3 abstains; user a3 -> call@4 abstains; a5
    assert counts(by_state) == (3, 2, 1, 0, 2, 3)


def test_without_repredict_an_accepted_suggestion_waits_for_the_next_user_action():
    p = scripted(SCRIPT)
    r = online_evaluate(T, p, repredict=False)
    # call@1 rejected; call@2 accepted, stop; user a4 -> call@4 abstains; user a5.
    assert counts(r) == (4, 1, 1, 1, 1, 3)
    assert p.calls == [1, 2, 4]


def test_wrong_value_and_no_op_are_rejected():
    wrong = scripted({1: [A("INPUT | A2 | 99")], 2: [A("INPUT | A2 | 1")]})
    r = online_evaluate(T, wrong)
    # call@1 wrong value: rejected; user a2 -> call@2 is now a no-op: rejected;
    # users a3, a4, a5 -> calls @3 @4 abstain (none after the last action).
    assert counts(r) == (5, 0, 0, 2, 2, 4)


def test_k_is_all_or_nothing_and_longer_suggestions_are_cut_to_k():
    p = scripted({1: [A("INPUT | A2 | 1"), A("INPUT | A3 | 3")],                 # 2nd wrong
                  2: [A("INPUT | A3 | 2"), A("FONT_BOLD | A1 | true"),
                      A('INPUT | A9 | "never shown"')],                         # cut to 2
                  4: [A("FONT_BOLD | A2 | true")]})
    r = online_evaluate(T, p, k=2)
    # call@1 rejected as a whole (A2 stays empty, so the user still types a2);
    # call@2 shows a3, a4: accepted (history 4); call@4 a5: accepted -> done.
    assert counts(r) == (2, 3, 2, 1, 0, 3)
    with_k1 = online_evaluate(T, scripted({1: [A("INPUT | A2 | 1"), A("INPUT | A3 | 3")]}))
    assert counts(with_k1) == (4, 1, 1, 0, 3, 4)    # k=1 shows only the right first half


def test_abstaining_everywhere_costs_one_call_per_user_action_but_the_last():
    r = online_evaluate(T, scripted({}))
    assert counts(r) == (5, 0, 0, 0, 4, 4)
    assert r.saved_rate == 0 and r.reached


def test_the_oracle_saves_all_but_the_first_action():
    r = online_evaluate(T, make_predictor("oracle", trajectory=T))
    assert counts(r) == (1, 4, 4, 0, 0, 4)
    r2 = online_evaluate(T, make_predictor("oracle", trajectory=T), k=4)
    assert counts(r2) == (1, 4, 1, 0, 0, 1)


def test_every_n_trigger_calls_only_on_multiples_of_n():
    every3 = make_trigger("every_n", n=3)
    assert [every3(T[:1] * n) for n in range(1, 7)] == [False, False, True, False, False, True]
    assert make_trigger("every_n")(T[:2]) and not make_trigger("every_n")(T[:3])  # n = 2
    r = online_evaluate(T, make_predictor("oracle", trajectory=T),
                        trigger=make_trigger("every_n", n=2))
    # user a1 (len 1): no call. user a2 (len 2): call, a3 accepted (len 3): stop.
    # user a4 (len 4): call, a5 accepted -> done.
    assert counts(r) == (3, 2, 2, 0, 0, 2)


def test_cheap_trigger_on_hand_histories_and_in_the_loop():
    cheap = make_trigger("cheap")
    assert not cheap([])
    assert not cheap([A("INPUT | A1 | 1")])
    assert not cheap([A("INPUT | A1 | 1"), A("INPUT | A2 | 2")])       # the run goes on
    assert not cheap([A("INPUT | A1 | 1"), A("INPUT | B1 | 2")])       # along the row too
    assert cheap([A("INPUT | A1 | 1"), A("INPUT | C1 | 2")])           # the run has ended
    assert cheap([A("INPUT | A1 | 1"), A("MERGE | A1:B1 | true")])     # a format action
    assert not cheap([A("FONT_BOLD | A1 | true"), A("INPUT | A5 | 2")])
    T2 = [A("INPUT | A1 | 1"), A("INPUT | A2 | 2"), A("INPUT | A3 | 3"), A('INPUT | C1 | "x"'),
          A("FONT_BOLD | A1:A3 | true"), A('INPUT | D5 | "y"')]
    r = online_evaluate(T2, make_predictor("oracle", trajectory=T2), trigger=cheap)
    # b1 b2 b3 continue the run: no call. b4 jumps: call, b5 accepted; b5 is a format
    # action: call again, b6 accepted -> done.
    assert counts(r) == (4, 2, 2, 0, 0, 2)
    always = online_evaluate(T2, make_predictor("oracle", trajectory=T2),
                             trigger=make_trigger("always"))
    assert counts(always) == (1, 5, 5, 0, 0, 5)


def test_a_self_overwriting_trajectory_can_end_off_target_and_says_so():
    t = [A('INPUT | A1 | "b"'), A('INPUT | A1 | "a"'), A('INPUT | A1 | "b"')]
    r = online_evaluate(t, scripted({}))
    # after the first action the third no longer changes the state: dropped; the user
    # types "a" and the loop ends with A1 = "a", not the target's "b".
    assert counts(r)[:2] == (2, 1) and not r.reached


def test_accepts_by_hand():
    target = apply_actions(T + [A("MERGE | C1:D1 | true")])
    state = apply_actions(T[:1])
    assert accepts(state, [A("INPUT | A2 | 1")], target)
    assert not accepts(state, [A('INPUT | A1 | "y"')], target)                 # overwrite
    assert not accepts(state, [A('INPUT | A1 | "x"')], target)                 # no change
    assert not accepts(state, [], target)
    assert not accepts(state, [A("INPUT | A2 | 1"), A("INPUT | A3 | 5")], target)
    assert accepts(state, [A("INPUT | A2 | 5"), A("INPUT | A2 | 1")], target)  # net change
    assert accepts(state, [A("MERGE | C1:D1 | true")], target)
    assert not accepts(state, [A("MERGE | C1:E1 | true")], target)             # not a target merge
    merged = apply_actions([A("MERGE | C1:D1 | true")], state)
    assert not accepts(merged, [A('INPUT | D1 | "x"')], target)                # cannot apply
    assert accepts(SheetState(), [A("FONT_BOLD | A1:A2 | true")], target)


def test_bad_arguments():
    with pytest.raises(ConfigError):
        online_evaluate(T, scripted({}), k=0)
    with pytest.raises(ConfigError, match="state, next_action"):
        online_evaluate(T, scripted({}), acceptance="exact")
    with pytest.raises(TypeError):
        online_evaluate(T, lambda h, s, k: ["INPUT | A2 | 1"])
    with pytest.raises(ConfigError, match="always, cheap, every_n"):
        make_trigger("sometimes")
    with pytest.raises(ConfigError):
        make_trigger("cheap", n=3)
    with pytest.raises(ConfigError):
        make_trigger("every_n", n=0)
    assert online_evaluate([], scripted({})).saved_rate == 0.0
