"""The temporal world, its snapshots, the schedules and the KairosQA rules, against
hand-written fixtures, closed forms and oracle models."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
import torch
from scipy import stats as sps

from raystudy.algorithms.models import GPT
from raystudy.algorithms.temporal import (
    KairosFormatError,
    Mixture,
    build_choices,
    cloze_prediction,
    dated_probe,
    exact_match,
    f1_score,
    filler_rows,
    forgetting,
    freshness_probe,
    generative_probe,
    gpt_generator,
    gpt_scorer,
    invariant_probe,
    is_similar,
    make_world,
    normalize_answer,
    order,
    parse,
    read_kairosqa,
    recency_slope,
    snapshot,
    split_filler,
    world_records,
    write_kairosqa,
    wsd_lr,
)
from raystudy.algorithms.temporal.corpus import dated, located, undated

FILLER = np.frombuffer(b"def f(x):\n    return x + 1  # a comment about nothing\n" * 40,
                       dtype=np.uint8)


@pytest.fixture(scope="module")
def world():
    return make_world(n_entities=12, n_relations=2, n_years=5, n_values=8, seed=3)


# ----------------------------------------------------------------------------- world
def test_world_invariants_and_determinism(world):
    assert world.kept
    for e, r in world.kept:
        assert len(set(world.values[e, r].tolist())) >= 3
    for e in range(12):  # kept = exactly the pairs with >= 3 distinct values
        for r in range(2):
            assert ((e, r) in world.kept) == (len(set(world.values[e, r].tolist())) >= 3)
    names = world.entities + [v for vs in world.vocab for v in vs] + world.places
    assert len(set(names)) == len(names) and all(n.isalpha() for n in names)
    assert math.isclose(world.popularity.sum(), 1.0)
    again = make_world(n_entities=12, n_relations=2, n_years=5, n_values=8, seed=3)
    assert np.array_equal(again.values, world.values) and again.entities == world.entities
    other = make_world(n_entities=12, n_relations=2, n_years=5, n_values=8, seed=4)
    assert not np.array_equal(other.values, world.values)
    with pytest.raises(ValueError, match="no \\(entity, relation\\) pair"):
        make_world(n_years=4, p_change=0.0)


def test_change_rate_matches_p_change():
    w = make_world(n_entities=400, n_relations=2, n_years=6, n_values=10, p_change=0.3, seed=0)
    changes = (np.diff(w.values, axis=2) != 0).mean()
    assert abs(changes - 0.3) < 0.02  # a change always goes to a different value


def test_snapshots_equal_size_and_deterministic(world):
    mix = Mixture(hist_share=0.5)
    rows = [snapshot(world, t, 30, 48, mix, FILLER, seed=1) for t in range(5)]
    assert {r.shape for r in rows} == {(30, 49)}
    assert all(r[0] == ord("\n") for snap in rows for r in snap)
    assert np.array_equal(rows[2], snapshot(world, 2, 30, 48, mix, FILLER, seed=1))
    text = b"".join(bytes(r) for r in rows[0]).decode()
    assert str(world.years[1]) not in text  # year 0: nothing about later years
    later = b"".join(bytes(r) for r in snapshot(world, 4, 200, 48, mix, FILLER, 1)).decode()
    assert any(f"In {y}," in later for y in world.years[:4])  # historical statements
    none = Mixture(hist_share=0.0, dated_share=1.0)
    only = b"".join(bytes(r) for r in snapshot(world, 4, 200, 48, none, FILLER, 1)).decode()
    assert not any(f"In {y}," in only for y in world.years[:4])
    assert filler_rows(FILLER, 5, 48, 0).shape == (5, 49)
    train, val = split_filler(np.arange(100, dtype=np.uint8))
    assert len(train) == 90 and set(train.tolist()).isdisjoint(val.tolist())
    with pytest.raises(ValueError):
        Mixture(fact_share=0.9, invariant_share=0.2)


# ----------------------------------------------------------------------------- schedules
@pytest.mark.parametrize("name", ["sequential", "shuffled", "reverse", "shuffled_upto/2",
                                  "replay/0.25"])
def test_every_schedule_sees_the_same_rows(name):
    o = order(name, 5, 40, seed=0)
    ref = np.stack([np.repeat(np.arange(5), 40), np.tile(np.arange(40), 5)], 1)
    assert o.shape == ref.shape
    assert sorted(map(tuple, o.tolist())) == sorted(map(tuple, ref.tolist()))
    assert np.array_equal(o, order(name, 5, 40, seed=0))


def test_schedule_shapes():
    assert np.all(np.diff(order("sequential", 6, 50, 1)[:, 0]) >= 0)
    assert np.all(np.diff(order("reverse", 6, 50, 1)[:, 0]) <= 0)
    rho = sps.spearmanr(np.arange(6 * 500), order("shuffled", 6, 500, 1)[:, 0])[0]
    assert abs(rho) < 0.05
    up = order("shuffled_upto/2", 6, 50, 1)
    assert set(up[:150, 0].tolist()) == {0, 1, 2} and np.all(np.diff(up[150:, 0]) >= 0)
    rep = order("replay/0.3", 6, 200, 1)
    last_block = rep[-200:, 0]
    assert (last_block < 5).mean() > 0.1  # the last year's batches replay earlier years
    assert np.array_equal(order("replay/0", 6, 50, 1), order("sequential", 6, 50, 1))
    for bad in ("chronological", "replay/2", "shuffled_upto/x", "sequential/1"):
        with pytest.raises(ValueError, match="unknown schedule"):
            parse(bad)


def test_wsd_lr_hand_values():
    assert wsd_lr(5, 100, 1.0, 10) == 0.5
    assert wsd_lr(50, 100, 1.0, 10) == 1.0
    assert wsd_lr(95, 100, 1.0, 10) == pytest.approx(0.5)
    assert wsd_lr(100, 100, 1.0, 10) == 0.0


# ----------------------------------------------------------------------------- kairos
def test_answer_normalisation_and_f1():
    assert normalize_answer("The  Big, Cat!") == "big cat"
    assert normalize_answer("An apple a day") == "apple day"
    assert exact_match("the Big cat.", ["dog", "big cat"]) == 1.0
    assert f1_score("big cat", ["big dog"]) == pytest.approx(0.5)
    assert f1_score("big red cat", ["cat", "big red"]) == pytest.approx(0.8)  # max of 2/4, 4/5
    assert f1_score("the", ["a"]) == 0.0
    assert is_similar("Real Madrid", ["madrid real"]) and not is_similar("Madrid", "Real Madrid")


FIXTURE = [
    {"question": "Who coached Ajax in {year}?", "subject": "Ajax", "relation": "coach",
     "subject_rank": 3, "multi_choice_answers": [
         [["Alpha"], 2020], [["Beta"], 2021], [["alpha,"], 2022], [["Gamma"], 2023],
         [["The Delta"], 2024], [["Xi", "Omega"], -1]]},
    {"question": "Mayor in {year}?", "multi_choice_answers": [[["P"], 2021], [["Q"], 2022]]},
    {"question": "None here {year}", "multi_choice_answers": [[["R", None], 2021]]},
    {"question": "Owner in {year}?", "multi_choice_answers": [
        [["Kappa"], 2019], [["Lambda"], 2020], [["Mu"], 2021], [["Kappa"], 2022],
        [["Zeta"], -1]]},
]


def test_choice_construction_on_a_fixture():
    items = list(build_choices(FIXTURE, 2021))
    assert len(items) == 3  # the None record is skipped
    first = items[0]
    # by hand: gold Beta; other years' answers, each with the LAST year it is listed
    # ("alpha," is a distinct string, year 2022; "Alpha" 2020), nearest first:
    # Alpha(2020, |1|), alpha,(2022, dropped: similar to Alpha), Gamma(2023), The Delta(2024)
    unshuffled = ["Beta", "Alpha", "Gamma", "The Delta"]
    years = [2021, 2020, 2023, 2024]
    perm = list(range(4))
    random.Random(2021 + 0).shuffle(perm)
    assert first["choices"] == [unshuffled[j] for j in perm]
    assert first["choice_years"] == [years[j] for j in perm]
    assert first["choices"][first["gold"]] == "Beta" and first["gt"] == ["Beta"]
    assert first["question"] == "Who coached Ajax in 2021?"
    # record 1: P and Q only, topped up with nothing (no year -1 answers): 2 choices
    assert sorted(items[1]["choices"]) == ["P", "Q"]
    # record 3 (line 3): Mu; Lambda 2020 and Kappa (last listed 2022) at distance 1
    # (stable order: Kappa first), then the year -1 top-up Zeta
    perm = list(range(4))
    random.Random(2021 + 3).shuffle(perm)
    base = ["Mu", "Kappa", "Lambda", "Zeta"]
    assert items[2]["choices"] == [base[j] for j in perm]
    assert items[2]["choice_years"] == [[2021, 2022, 2020, -1][j] for j in perm]
    assert [i["question"] for i in build_choices(FIXTURE, 2021, k_shot=1)] == \
        ["Who coached Ajax in 2021?"]
    assert [i["question"] for i in build_choices(FIXTURE, 2021, k_shot=-1)] == \
        ["Mayor in 2021?", "Owner in 2021?"]
    two = list(build_choices(FIXTURE, 2021, n_choices=4, n_distractor=2))[0]
    assert sorted(two["choices"]) == ["Alpha", "Beta", "Omega", "Xi"]  # LLM top-up, sorted


def test_cloze_normalisations_differ():
    conts = [" ab.", " abcdefgh."]
    nll = [3.0, 5.0]  # none: 3 < 5; character: 0.75 > 0.5
    assert cloze_prediction(nll, conts, "none") == 0
    assert cloze_prediction(nll, conts, "character") == 1


def test_multi_choice_prompt_and_letter_rule():
    from raystudy.algorithms.temporal.kairos import multi_choice_context, multi_choice_prediction

    shot = {"question": "Mayor in 2020?", "choices": ["Xi", "Omega"], "gold": 1}
    assert multi_choice_context("Owner in 2021?", ["Alpha", "Beta", "Gamma"], [shot]) == (
        "Question: Mayor in 2020?\n A. Xi\n B. Omega\nAnswer: B\n\n"
        "Question: Owner in 2021?\n A. Alpha\n B. Beta\n C. Gamma\nAnswer:")
    assert multi_choice_prediction([2.0, 0.5, 0.5]) == 1  # lowest NLL, ties to the first


def test_reader_round_trip_and_errors(tmp_path):
    path = tmp_path / "k.jsonl"
    write_kairosqa(path, FIXTURE)
    assert read_kairosqa(path) == json.loads(json.dumps(FIXTURE))
    with pytest.raises(FileNotFoundError, match="make-temporal-world"):
        read_kairosqa(tmp_path / "missing.jsonl")
    for line, what in (("{", "not JSON"), ('{"q": 1}', "question"),
                       ('{"question": "x", "multi_choice_answers": [["a", 2020]]}', "pairs"),
                       ('{"question": "x", "multi_choice_answers": [[["a"], "y"]]}', "integer")):
        path.write_text(line + "\n")
        with pytest.raises(KairosFormatError, match=what):
            read_kairosqa(path)


# ----------------------------------------------------------------------------- oracles
def _table_scorer(truth):
    """NLL 0 for the continuation ``truth`` maps the context to, 10 otherwise."""
    return lambda pairs: np.array([0.0 if truth.get(c) == x else 10.0 for c, x in pairs])


def test_lookup_oracle_is_perfect(world):
    truth = {"\n" + dated(world, e, r, y): f" {world.value(e, r, y)}."
             for e, r in world.kept for y in world.years}
    truth.update({"\n" + undated(world, e, r): f" {world.latest(e, r)}." for e, r in world.kept})
    truth.update({"\n" + located(world, e): f" {world.places[world.invariant[e]]}."
                  for e in range(len(world.entities))})
    scorer = _table_scorer(truth)
    res = dated_probe(world_records(world), world.years, scorer)
    assert all(a == 1.0 for a in res.acc.values()) and res.year_error == 0.0
    assert all(a == 1.0 for a in res.acc_none.values())
    assert freshness_probe(world, scorer) == 1.0 and invariant_probe(world, scorer) == 1.0
    gen = lambda ctx: truth[ctx][1:] + " and more"  # noqa: E731
    assert generative_probe(world, world.years[-1], gen) == (1.0, 1.0)


def test_always_latest_oracle(world):
    truth = {"\n" + dated(world, e, r, y): f" {world.latest(e, r)}."
             for e, r in world.kept for y in world.years}
    res = dated_probe(world_records(world), world.years, _table_scorer(truth))
    for t, y in enumerate(world.years):  # right exactly where year y's value is the last one
        expect = np.mean([world.values[e, r, t] == world.values[e, r, -1] for e, r in world.kept])
        assert res.acc[y] == pytest.approx(expect)
    assert res.acc[world.years[-1]] == 1.0
    assert recency_slope(res.acc) > 0


def test_constant_logits(world):
    scorer = lambda pairs: np.array([len(x) * math.log(256) for _, x in pairs])  # noqa: E731
    records = world_records(world)
    res = dated_probe(records, world.years, scorer)
    for y in world.years:
        items = list(build_choices(records, y))
        assert res.acc[y] == pytest.approx(np.mean([it["gold"] == 0 for it in items]))
        shortest = [int(np.argmin([len(c) for c in it["choices"]])) for it in items]
        hits = [s == it["gold"] for s, it in zip(shortest, items, strict=True)]
        assert res.acc_none[y] == pytest.approx(np.mean(hits))
    assert res.chance == pytest.approx(0.25)


def test_summaries():
    acc = {2020: 0.2, 2021: 0.5, 2022: 0.4, 2023: 0.9}
    assert recency_slope(acc) == pytest.approx(sps.linregress(list(acc), list(acc.values())).slope)
    hist = [{2020: 0.5, 2021: 0.1}, {2020: 0.3, 2021: 0.6}]
    assert forgetting(hist) == pytest.approx({2020: 0.2, 2021: 0.0})


def test_gpt_scorer_matches_brute_force():
    torch.manual_seed(0)
    model = GPT(256, 32, d_model=16, n_layers=1, n_heads=2)
    pairs = [("\nIn 2021, the", " coach."), ("ab", " c"), ("x" * 40, " long tail")]
    got = gpt_scorer(model, 32, batch_size=2)(pairs)
    for (ctx, cont), value in zip(pairs, got, strict=True):
        ids = list((ctx + cont).encode())[-33:]
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([ids[:-1]]))[0], -1)
        n = len(cont.encode())
        want = -sum(float(logp[j - 1, ids[j]]) for j in range(len(ids) - n, len(ids)))
        assert value == pytest.approx(want, rel=1e-5)
    text = gpt_generator(model, 32, max_new=5)("\nIn 2021")
    assert 1 <= len(text.encode("utf-8", "replace")) <= 15
