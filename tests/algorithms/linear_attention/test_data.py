"""MQAR and sparse MQAR: every query's label is its pair's value, the layout and vocab split
hold, the power law favours early queries, and one seed gives one batch."""

from __future__ import annotations

import pytest
import torch

from raystudy.algorithms.linear_attention import (
    FILLER,
    IGNORE,
    KEY,
    QUERY,
    VALUE,
    mqar,
    mqar_sparse,
)


def _check_answers(batch):
    """At every query, the label is the token after the key's first occurrence."""
    for row in range(batch.inputs.shape[0]):
        queries = torch.nonzero(batch.kind[row] == QUERY).flatten()
        assert torch.equal(queries, torch.nonzero(batch.labels[row] != IGNORE).flatten())
        for t in queries.tolist():
            src = int(batch.source[row, t])
            assert 0 <= src < t and batch.inputs[row, src] == batch.inputs[row, t]
            assert batch.kind[row, src] == KEY and batch.kind[row, src + 1] == VALUE
            assert batch.labels[row, t] == batch.inputs[row, src + 1]


def test_mqar_layout_and_answers():
    batch = mqar(16, 64, 100, 8, seed=0)
    assert batch.inputs.shape == (16, 64) and batch.inputs.dtype == torch.long
    assert (batch.kind[:, :16:2] == KEY).all() and (batch.kind[:, 1:16:2] == VALUE).all()
    keys, values = batch.inputs[:, :16:2], batch.inputs[:, 1:16:2]
    assert (keys >= 1).all() and (keys < 50).all() and (values >= 50).all()
    assert all(len(set(row.tolist())) == 8 for row in keys)     # distinct keys
    assert ((batch.kind == QUERY).sum(1) == 8).all()
    assert batch.inputs.max() < 100 and batch.inputs.min() >= 0
    _check_answers(batch)


def test_mqar_power_law_puts_most_queries_early():
    batch = mqar(64, 128, 200, 8, seed=1)
    slot = (torch.nonzero(batch.kind == QUERY)[:, 1] - 16) // 2   # 56 slots
    assert (slot < 28).float().mean() > 0.6                      # p(g) ~ g^-0.99
    uniform = mqar(64, 128, 200, 8, power_a=1.0, seed=1)         # a = 1: uniform gaps
    slot_u = (torch.nonzero(uniform.kind == QUERY)[:, 1] - 16) // 2
    assert (slot_u < 28).float().mean() < 0.6


def test_mqar_sparse_layout_and_answers():
    batch = mqar_sparse(16, 96, 64, 6, filler_vocab=8, filler_run_mean=6.0, seed=0)
    _check_answers(batch)
    assert (batch.kind[:, -12::2] == QUERY).all() and (batch.kind[:, -11::2] == FILLER).all()
    context = batch.kind[:, :-12]
    assert ((context == KEY).sum(1) == 6).all() and ((context == VALUE).sum(1) == 6).all()
    filler = batch.inputs[batch.kind == FILLER]
    assert filler.max() < 8
    keys = batch.inputs[batch.kind == KEY]
    assert (keys >= 8).all() and (keys < 36).all()              # (64 - 8) // 2 = 28 key ids
    assert (batch.inputs[batch.kind == VALUE] >= 36).all()
    # stable runs: most consecutive filler tokens repeat a short motif
    row = batch.inputs[0, :-12][batch.kind[0, :-12] == FILLER]
    repeats = sum(any(row[i] == row[i - j] for j in (1, 2, 3)) for i in range(3, len(row)))
    assert repeats / (len(row) - 3) > 0.55                     # i.i.d. over 8 ids: about 0.33


def test_one_seed_one_batch():
    a, b, c = (mqar_sparse(4, 64, 48, 4, seed=s) for s in (3, 3, 4))
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.inputs, c.inputs)
    assert torch.equal(mqar(4, 32, 40, 4, seed=9).inputs, mqar(4, 32, 40, 4, seed=9).inputs)


def test_bad_input_raises_one_line():
    cases = [
        (lambda: mqar(2, 30, 100, 8), "seq_len"),
        (lambda: mqar(2, 64, 10, 8), "vocab_size"),
        (lambda: mqar(2, 64, 100, 0), "n="),
        (lambda: mqar_sparse(2, 64, 20, 8), "vocab_size"),
        (lambda: mqar_sparse(2, 64, 64, 4, filler_run_mean=0.5), "filler_run_mean"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError) as error:
            call()
        assert "\n" not in str(error.value) and str(error.value).startswith(name)
