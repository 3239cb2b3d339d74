"""TinyJudge: shapes and log-probabilities, an encoder backbone, and that a few hundred steps
of SFT on the biased teacher learn both quality and the teacher's cues."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from raystudy.algorithms.judging import (
    TinyJudge,
    agreement,
    biased_teacher,
    cue_bias,
    make_world,
    position_bias,
)


def _judge(pairs, **kwargs):
    torch.manual_seed(0)
    return TinyJudge(pairs.vocab_size, pairs.tokens.shape[1], **kwargs)


def test_heads_and_log_probabilities():
    pairs = make_world(6, seed=0)
    judge = _judge(pairs)
    tokens = torch.as_tensor(pairs.tokens)
    point = torch.as_tensor(pairs.point_tokens[:, 0])
    logits, score_logits = judge.verdict_logits(tokens), judge.score_logits(point)
    assert logits.shape == (6, 3) and score_logits.shape == (6, 10)
    verdicts = torch.tensor([0, 1, 2, 2, 1, 0])
    expected = torch.log_softmax(logits, -1)[torch.arange(6), verdicts]
    assert torch.allclose(judge.verdict_logps(tokens, verdicts), expected)
    scores = torch.tensor([1, 10, 5, 3, 7, 2])
    expected = torch.log_softmax(score_logits, -1)[torch.arange(6), scores - 1]
    assert torch.allclose(judge.score_logps(point, scores), expected)
    assert torch.equal(judge.judge(tokens), logits.argmax(-1))
    assert judge.score(point).min() >= 1 and judge.score(point).max() <= 10
    with pytest.raises(ValueError, match="^idx"):
        judge.verdict_logits(torch.zeros(2, pairs.tokens.shape[1] + 1, dtype=torch.long))


def test_the_verdict_reads_the_whole_pair():
    """The head sits at the last token of a causal stack, so it must see the first
    response: changing only the first response's answer changes the logits."""
    pairs = make_world(2, seed=1)
    judge = _judge(pairs)
    tokens = torch.as_tensor(pairs.tokens)
    changed = tokens.clone()
    changed[:, 4] = (changed[:, 4] + 1) % 10
    assert not torch.allclose(judge.verdict_logits(tokens), judge.verdict_logits(changed))


class _Encoder(nn.Module):
    """A stand-in backbone with load_encoder's contract: idx (B, T) -> hidden (B, T, H)."""

    hidden_size = 24

    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab_size, self.hidden_size)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(self.emb(idx), dim=1)


def test_an_encoder_backbone_replaces_the_gpt_blocks():
    pairs = make_world(4, seed=2)
    encoder = _Encoder(pairs.vocab_size)
    judge = _judge(pairs, encoder=encoder)
    assert judge.verdict_head.in_features == 24 and not hasattr(judge, "blocks")
    judge.verdict_logps(torch.as_tensor(pairs.tokens), torch.zeros(4)).sum().backward()
    assert encoder.emb.weight.grad is not None and encoder.emb.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="^encoder"):
        TinyJudge(10, 10, encoder=nn.Linear(2, 2))


def test_sft_on_the_teacher_learns_quality_and_its_cues(one_thread):
    # K = 4 digits and 4 padding slots: 26 tokens, a faster test
    train = make_world(3000, seed=3, n_digits=4, max_pad=4)
    test = make_world(2000, seed=4, n_digits=4, max_pad=4)
    judge = _judge(train)
    steps = 250
    optimizer = torch.optim.AdamW(judge.parameters(), lr=3e-3)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 1 - k / steps)
    x, y = torch.as_tensor(train.tokens), torch.as_tensor(biased_teacher(train))
    generator = torch.Generator().manual_seed(0)
    for _ in range(steps):
        batch = torch.randint(0, len(train), (64,), generator=generator)
        loss = F.cross_entropy(judge.verdict_logits(x[batch]), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    v = judge.judge(torch.as_tensor(test.tokens)).numpy()
    v_swapped = judge.judge(torch.as_tensor(test.swap().tokens)).numpy()
    majority = np.bincount(test.label).max() / len(test)
    assert agreement(v, test.label) > majority + 0.25
    # the teacher leans to the first and the longer response (both biases about 0.12 on
    # these pairs); so does its student, where the labels show no length bias
    assert position_bias(v, v_swapped) > 0.05
    assert cue_bias(v, test.length) > 0.04 > abs(cue_bias(test.label, test.length))
