"""speculative_generate against the target's exact law: on context-dependent toy models whose
next-token law depends on the window's first and last token (so the crop to seq_len
matters), the joint law of the first three new tokens is enumerated by hand and the
empirical frequencies compared by chi-square; greedy SD equals the target's greedy decoding
(toys, the project's GPT with a cropped context, an n-gram draft); a draft equal to the
target emits gamma + 1 tokens per step; one target call per step."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy import stats

from raystudy.algorithms.models import GPT
from raystudy.algorithms.speculative import (
    ByteNGramDraft,
    autoregressive_generate,
    next_token_logits,
    speculative_generate,
)

V = 3


class _Toy:
    """``logits[b, t] = log table[idx[b, 0], idx[b, t]]``: the law of the next token depends on
    the first token of the (cropped) window and the current one; counts its calls."""

    def __init__(self, seed: int, seq_len: int, concentration: float = 1.0) -> None:
        g = torch.Generator().manual_seed(seed)
        raw = torch.rand(V, V, V, generator=g, dtype=torch.float64) + concentration
        self.table = raw / raw.sum(-1, keepdim=True)
        self.seq_len = seq_len
        self.calls = 0

    def __call__(self, idx: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.table[idx[:, :1].expand_as(idx), idx].log()

    def law(self, history: list[int]) -> torch.Tensor:
        """The next-token law after ``history`` by the crop rule, written out."""
        window = history[-self.seq_len:]
        return self.table[window[0], window[-1]]


def _joint(model: _Toy, prompt: list[int], k: int) -> dict[tuple[int, ...], float]:
    """The exact law of the first ``k`` new tokens, by enumeration."""
    out = {}
    for tail in itertools.product(range(V), repeat=k):
        prob, history = 1.0, list(prompt)
        for token in tail:
            prob *= float(model.law(history)[token])
            history.append(token)
        out[tail] = prob
    return out


def _pvalue(samples: list[tuple[int, ...]], law: dict[tuple[int, ...], float]) -> float:
    cells = sorted(law)
    counts = np.array([sum(1 for s in samples if s == c) for c in cells])
    expected = np.array([law[c] for c in cells]) * len(samples)
    assert expected.min() >= 5
    return float(stats.chisquare(counts, expected).pvalue)


def test_next_token_logits_follow_the_crop_rule():
    target = _Toy(0, seq_len=3)
    history = torch.tensor([0, 1, 2, 2, 1, 0])
    logits = next_token_logits(target, history, n=4)
    assert target.calls == 1  # the distinct windows go in one call
    for row, length in enumerate(range(3, 7)):
        expected = target.law(history[:length].tolist()).log()
        torch.testing.assert_close(logits[row], expected)


def test_sd_at_temperature_one_has_the_targets_joint_law():
    """Prompt of 2 with seq_len 3: every verification crosses the crop; a draft with its own
    crop (2) and a different law makes rejections frequent."""
    target, draft = _Toy(1, seq_len=3), _Toy(2, seq_len=2, concentration=0.3)
    prompt = [2, 0]
    law = _joint(target, prompt, 3)
    g = torch.Generator().manual_seed(0)
    samples, steps = [], []
    for _ in range(1500):
        out = speculative_generate(target, draft, torch.tensor(prompt), 3, gamma=2, generator=g)
        samples.append(tuple(out.tokens[2:].tolist()))
        steps.extend(out.accepted)
    assert _pvalue(samples, law) > 1e-3
    assert set(steps) == {0, 1, 2}  # rejections at both positions and full acceptance occur
    # the test has power: the draft's own joint law is rejected
    assert _pvalue(samples, _joint(draft, prompt, 3)) < 1e-6
    baseline = [tuple(autoregressive_generate(target, torch.tensor(prompt), 3,
                                              generator=g)[2:].tolist()) for _ in range(1000)]
    assert _pvalue(baseline, law) > 1e-3


def test_greedy_sd_equals_the_targets_greedy_decoding_on_toys():
    target, draft = _Toy(3, seq_len=3), _Toy(4, seq_len=4)
    for prompt in ([0], [1, 2], [2, 2, 0, 1]):
        expected = autoregressive_generate(target, torch.tensor(prompt), 12, temperature=0)
        history = list(prompt)
        for _ in range(12):  # the greedy decoding written out from the crop rule
            history.append(int(target.law(history).argmax()))
        assert expected.tolist() == history
        for gamma in (1, 2, 5):
            out = speculative_generate(target, draft, torch.tensor(prompt), 12, gamma=gamma,
                                       temperature=0)
            assert torch.equal(out.tokens, expected)


def _gpt(seed: int, vocab: int = 32, seq_len: int = 10) -> GPT:
    torch.manual_seed(seed)
    model = GPT(vocab, seq_len, d_model=16, n_layers=1, n_heads=2).eval()
    with torch.no_grad():
        model.head.weight.mul_(50)  # spread the logits: greedy ties far from float noise
    return model


def test_greedy_sd_equals_greedy_for_a_gpt_with_a_cropped_context():
    target = _gpt(0)
    near = _gpt(0)
    with torch.no_grad():
        for param in near.parameters():
            param.mul_(1 + 0.05 * torch.randn_like(param))
    tokens = torch.randint(32, (2000,), generator=torch.Generator().manual_seed(1))
    ngram = ByteNGramDraft(3, vocab_size=32).fit(tokens)
    prompt = torch.randint(32, (6,), generator=torch.Generator().manual_seed(2))
    expected = autoregressive_generate(target, prompt, 30, temperature=0)
    accepted = []
    for draft in (near, ngram, _gpt(5)):
        for gamma in (1, 3, 6):
            target_calls = 0

            def counted(idx, _model=target):
                nonlocal target_calls
                target_calls += 1
                return _model(idx)

            counted.seq_len = target.seq_len  # type: ignore[attr-defined]
            out = speculative_generate(counted, draft, prompt, 30, gamma=gamma, temperature=0)
            assert torch.equal(out.tokens, expected), (type(draft).__name__, gamma)
            assert sum(out.step_lengths) == 30 and target_calls == out.target_calls
            assert out.draft_calls == gamma * out.target_calls
            accepted.extend(out.accepted)
    assert min(accepted) == 0 and max(accepted) >= 4  # rejections and long accepted runs


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_a_draft_equal_to_the_target_emits_gamma_plus_one_per_step(temperature):
    target = _gpt(7, seq_len=64)
    prompt = torch.tensor([3, 1, 4, 1, 5])
    gamma, n = 4, 23
    out = speculative_generate(target, target, prompt, n, gamma=gamma, temperature=temperature,
                               generator=torch.Generator().manual_seed(0))
    assert out.accepted == [gamma] * len(out.accepted)
    assert out.step_lengths == [gamma + 1] * (n // (gamma + 1)) + [n % (gamma + 1)]
    assert out.tokens.shape == (len(prompt) + n,) and torch.equal(out.tokens[:5], prompt)


def test_zero_new_tokens_and_determinism_per_generator():
    target, draft = _gpt(8), _gpt(9)
    prompt = torch.tensor([1, 2, 3])
    empty = speculative_generate(target, draft, prompt, 0)
    assert torch.equal(empty.tokens, prompt) and empty.step_lengths == []
    runs = [speculative_generate(target, draft, prompt, 15, gamma=3,
                                 generator=torch.Generator().manual_seed(4)) for _ in range(2)]
    assert torch.equal(runs[0].tokens, runs[1].tokens)
    assert runs[0].step_lengths == runs[1].step_lengths
