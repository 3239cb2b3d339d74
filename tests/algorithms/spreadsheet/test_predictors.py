"""Predictors on hand-made histories (answers worked out by hand), n-gram counts against a
Counter, and the trained transformer's determinism and learning."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from raystudy.algorithms.spreadsheet import (
    PROFILES,
    Action,
    SheetState,
    action_tokens,
    apply_actions,
    generate_trajectory,
    make_predictor,
    offline_accuracy,
    online_evaluate,
    parse_action,
)
from raystudy.algorithms.spreadsheet.predictors import BOS, progression, shift_formula
from raystudy.errors import ConfigError


def A(line: str) -> Action:
    return parse_action(line)


def predict(name, history, k=1, state=None, **options):
    history = [A(h) for h in history]
    state = apply_actions(history) if state is None else state
    return make_predictor(name, **options)(history, state, k)


# ----------------------------------------------------------------------------- helpers
def test_shift_formula_moves_relative_references_like_excel():
    assert shift_formula("=SUM(B3:B12)", 0, 1) == "=SUM(C3:C12)"
    assert shift_formula("=$B3*C$1+$D$2", 1, 1) == "=$B4*D$1+$D$2"
    assert shift_formula('=A1&"A1"', 2, 0) == '=A3&"A1"'          # text in quotes stays
    assert shift_formula("=LOG10(A1)", 0, 1) == "=LOG10(B1)"       # a function, not a cell
    assert shift_formula("=A1", -1, 0) is None                     # off the sheet


def test_progression_in_decimal_arithmetic():
    assert progression([1, 3, 5], 3) == [7, 9, 11]
    assert all(isinstance(v, int) for v in progression([1, 3, 5], 2))
    assert progression([0.1, 0.2, 0.3], 2) == [0.4, 0.5]           # not 0.30000000000000004
    assert progression([2.5, 2.5, 2.5], 1) == [2.5]
    assert progression([1, 2, 4], 1) is None
    assert progression(["a", "a", "a"], 1) is None
    assert progression([True, True, True], 1) is None


# ----------------------------------------------------------------------------- repeat
def test_repeat_moves_the_last_action_by_its_stride():
    assert predict("repeat", ["FONT_BOLD | A2 | true", "INPUT | B5 | 3", "FONT_BOLD | B2 | true"],
                   k=2) == [A("FONT_BOLD | C2 | true"), A("FONT_BOLD | D2 | true")]
    assert predict("repeat", ["INPUT | B13 | =SUM(B3:B12)", "INPUT | C13 | =SUM(C3:C12)"]) == \
        [A("INPUT | D13 | =SUM(D3:D12)")]
    assert predict("repeat", ["FILL_COLOR | A3:C3 | #111111", "FILL_COLOR | A5:C5 | #222222"],
                   k=2) == [A("FILL_COLOR | A7:C7 | #222222"), A("FILL_COLOR | A9:C9 | #222222")]
    assert predict("repeat", ["INPUT | A1 | 1"]) == []                          # no stride
    assert predict("repeat", ["INPUT | A1 | 1", "FONT_BOLD | A1 | true"]) == []
    assert predict("repeat", []) == []


def test_repeat_stops_at_the_sheet_edge():
    assert predict("repeat", ["INPUT | C1 | 1", "INPUT | B1 | 1"], k=3) == [A("INPUT | A1 | 1")]


# ----------------------------------------------------------------------------- fill_pattern
def test_fill_pattern_continues_an_arithmetic_run():
    assert predict("fill_pattern", ["INPUT | A3 | 1", "INPUT | A4 | 3", "INPUT | A5 | 5"],
                   k=3) == [A("INPUT | A6 | 7"), A("INPUT | A7 | 9"), A("INPUT | A8 | 11")]
    assert predict("fill_pattern", ["INPUT | A1 | 0.1", "INPUT | B1 | 0.2", "INPUT | C1 | 0.3"]) \
        == [A("INPUT | D1 | 0.4")]
    # backwards along a row, cut at the edge; format actions in between are ignored
    assert predict("fill_pattern", ["INPUT | D1 | 9", "FONT_BOLD | D1 | true", "INPUT | C1 | 6",
                                    "INPUT | B1 | 3"], k=2) == [A("INPUT | A1 | 0")]
    out = predict("fill_pattern", ["INPUT | A1 | 1", "INPUT | A2 | 2", "INPUT | A3 | 3"])
    assert type(out[0].value) is int


@pytest.mark.parametrize("history", [
    ["INPUT | A1 | 1", "INPUT | A2 | 2", "INPUT | A3 | 4"],          # not arithmetic
    ["INPUT | A1 | 1", "INPUT | A2 | 2", "INPUT | A4 | 3"],          # a gap
    ["INPUT | A1 | 1", "INPUT | B2 | 2", "INPUT | C3 | 3"],          # diagonal
    ["INPUT | A1 | 1", "INPUT | A2 | 2", "INPUT | B2 | 3"],          # turns a corner
    ['INPUT | A1 | "a"', 'INPUT | A2 | "a"', 'INPUT | A3 | "a"'],    # text
    ["INPUT | A1 | 1", "INPUT | A2 | 2"],                            # too short
])
def test_fill_pattern_abstains_without_a_run(history):
    assert predict("fill_pattern", history, k=2) == []


def test_fill_pattern_saves_an_id_column_online():
    for seed in range(20):
        trajectory = generate_trajectory(seed, "column_major", n_rows=8, n_cols=3, noise=0)
        if apply_actions(trajectory).props("B3")["number_format"] == "000":
            break
    result = online_evaluate(trajectory, make_predictor("fill_pattern"))
    # B3, B4, B5 typed; B6..B10 filled (one suggestion each); nothing else is arithmetic
    assert result.saved == 5 and result.saved_by_kind == {"INPUT": 5} and result.reached


# ----------------------------------------------------------------------------- tokens, ngram
def test_tokens_by_hand():
    history = [A("INPUT | B3 | 5"), A('INPUT | B4 | "x"'), A("FONT_BOLD | A1:C1 | true"),
               A("INPUT | B20 | =A1")]
    assert action_tokens(history) == [("INPUT", 2, 1, "number"), ("INPUT", 1, 0, "text"),
                                      ("FONT_BOLD", -3, -1, "1x3:true"),
                                      ("INPUT", 8, 1, "formula")]       # 19 rows, clipped


def _reference_counts(trajectories, n):
    """n-gram counts by brute force: Counter of (context, next) at every order."""
    ref = [Counter() for _ in range(n)]
    for trajectory in trajectories:
        padded = [BOS] * (n - 1) + action_tokens(trajectory)
        for i in range(n - 1, len(padded)):
            for j in range(n):
                ref[j][(tuple(padded[i - j:i]), padded[i])] += 1
    return ref


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_ngram_counts_equal_a_counter_over_the_training_tokens(n):
    train = [generate_trajectory(s, p, n_rows=3, n_cols=3) for s in (1, 2) for p in PROFILES]
    model = make_predictor("ngram", train=train, n=n)
    ref = _reference_counts(train, n)
    for j in range(n):
        mine = Counter({(ctx, tok): c for ctx, dist in model.counts[j].items()
                        for tok, c in dist.items()})
        assert mine == ref[j]
    assert sum(model.counts[0][()].values()) == sum(map(len, train))


BOLD_ROW = ["FONT_BOLD | A1 | true", "FONT_BOLD | B1 | true", "FONT_BOLD | C1 | true"]
FILL_NEXT = ["FONT_BOLD | A1 | true", "FONT_BOLD | B1 | true", "FILL_COLOR | B2 | #00FF00"]


def test_ngram_predicts_the_most_frequent_continuation_with_back_off_and_threshold():
    train = [[A(x) for x in BOLD_ROW], [A(x) for x in BOLD_ROW], [A(x) for x in FILL_NEXT]]
    history = ["FONT_BOLD | A1 | true", "FONT_BOLD | B1 | true"]
    assert predict("ngram", history, train=train) == [A("FONT_BOLD | C1 | true")]   # p = 2/3
    assert predict("ngram", history, train=train, threshold=0.7) == []
    assert predict("ngram", history, train=train, threshold=0.6) == [A("FONT_BOLD | C1 | true")]
    # k = 2: (bold+1, bold+1) never went on in training: back off to (bold+1,) -> D1
    assert predict("ngram", history, k=2, train=train) == \
        [A("FONT_BOLD | C1 | true"), A("FONT_BOLD | D1 | true")]
    # an unseen trigram context backs off to the bigram's counts
    model = make_predictor("ngram", train=train)
    unseen = [A("FONT_ITALIC | A1 | true"), A("FONT_BOLD | B1 | true")]
    bold, fill = ("FONT_BOLD", 0, 1, "1x1:true"), ("FILL_COLOR", 1, 0, "1x1:#00FF00")
    assert model.distribution(unseen) == Counter({bold: 2, fill: 1})
    assert model.distribution([]) == Counter({("FONT_BOLD", 0, 0, "1x1:true"): 3})


def test_ngram_realises_numbers_formulas_and_abstains_on_text():
    column = [A(x) for x in ["INPUT | A1 | 1", "INPUT | A2 | 2", "INPUT | A3 | 3",
                             "INPUT | A4 | 4"]]
    assert predict("ngram", ["INPUT | C1 | 10", "INPUT | C2 | 20", "INPUT | C3 | 30"],
                   train=[column]) == [A("INPUT | C4 | 40")]
    assert predict("ngram", ["INPUT | C1 | 10", "INPUT | C2 | 20", "INPUT | C3 | 35"],
                   train=[column]) == []                               # no progression above
    row = [A(x) for x in ["INPUT | A1 | 1", "INPUT | B1 | 2", "INPUT | C1 | 3", "INPUT | D1 | 4"]]
    assert predict("ngram", ["INPUT | A5 | 10", "INPUT | B5 | 20", "INPUT | C5 | 30"],
                   train=[row]) == [A("INPUT | D5 | 40")]     # nothing above D5: the row
    totals = [A(x) for x in ["INPUT | B9 | =SUM(B1:B8)", "INPUT | C9 | =SUM(C1:C8)"]]
    assert predict("ngram", ["INPUT | B9 | =MAX(B1:B8)"], train=[totals]) == \
        [A("INPUT | C9 | =MAX(C1:C8)")]                   # the history's formula, copied on
    words = [[A(x) for x in ['INPUT | A1 | "a"', 'INPUT | A2 | "b"']]]
    assert predict("ngram", ['INPUT | A1 | "a"'], train=words) == []
    # a prediction that changes nothing is not made
    assert predict("ngram", ["INPUT | A1 | 1", "INPUT | A2 | 2", "INPUT | A3 | 3"],
                   state=apply_actions(column), train=[column]) == []


# ----------------------------------------------------------------------------- oracle, options
def test_oracle_suggests_the_next_actions_still_to_do():
    trajectory = [A(x) for x in ["INPUT | A1 | 1", "INPUT | A2 | 2", "FONT_BOLD | A1:A2 | true"]]
    state = apply_actions([trajectory[0], A("FONT_BOLD | A1:A2 | true")])
    oracle = make_predictor("oracle", trajectory=trajectory)
    assert oracle(trajectory[:1], state, 3) == [trajectory[1]]          # the bold is done
    assert oracle(trajectory, apply_actions(trajectory), 2) == []


def test_unknown_names_and_options_are_config_errors():
    with pytest.raises(ConfigError, match="repeat, fill_pattern, ngram, transformer, oracle"):
        make_predictor("lstm")
    with pytest.raises(ConfigError, match="valid options: n, threshold, train"):
        make_predictor("ngram", train=[], order=3)
    with pytest.raises(ConfigError, match="missing"):
        make_predictor("oracle")
    with pytest.raises(ConfigError):
        make_predictor("repeat", threshold=0.5)


# ----------------------------------------------------------------------------- transformer
@pytest.fixture(scope="module")
def sheets():
    train = [generate_trajectory(s, p, n_rows=4, n_cols=3) for s in range(100, 106)
             for p in PROFILES]
    test = [generate_trajectory(s, p, n_rows=4, n_cols=3) for s in range(3) for p in PROFILES]
    return train, test


SMALL = {"steps": 150, "d_model": 32, "context": 16}


def test_the_transformer_is_deterministic_and_leaves_torch_rng_alone(sheets):
    train, test = sheets
    rng = torch.random.get_rng_state()
    one = make_predictor("transformer", train=train[:8], seed=1, steps=20, d_model=16)
    assert torch.equal(rng, torch.random.get_rng_state())
    two = make_predictor("transformer", train=train[:8], seed=1, steps=20, d_model=16)
    other = make_predictor("transformer", train=train[:8], seed=2, steps=20, d_model=16)
    assert one.losses == two.losses and one.losses != other.losses
    history = test[0][:10]
    state = apply_actions(history)
    assert one(history, state, 3) == two(history, state, 3)


def test_the_transformer_never_predicts_pad_bos_or_unk(sheets):
    train, test = sheets
    model = make_predictor("transformer", train=train[:4], steps=0, d_model=16)
    with torch.no_grad():                       # the last hidden state is all ones, and
        model.model.ln_f.weight.zero_()         # only the special ids have logits > 0
        model.model.ln_f.bias.fill_(1.0)
        model.model.head.weight.zero_()
        model.model.head.weight[:3] = 1.0
    for t in range(1, 8):
        token, p = model.next_token(test[0][:t])
        assert token in model.vocab and p == pytest.approx(1 / len(model.vocab))


def test_the_transformer_learns_action_structure(sheets):
    train, test = sheets
    model = make_predictor("transformer", train=train, **SMALL)
    assert sum(model.losses[-10:]) / 10 < 0.3 * model.losses[0]
    accuracy = offline_accuracy(model, test)
    assert accuracy > 0.15 and accuracy > offline_accuracy(make_predictor("repeat"), test)
    quiet = make_predictor("transformer", train=train, threshold=1.01, **SMALL)
    result = online_evaluate(test[0], quiet)
    assert result.abstained == result.calls > 0 and result.saved == 0
    k1 = online_evaluate(test[0], model)
    assert k1.accepted > 0 and k1.reached
    assert SheetState() == apply_actions([])
