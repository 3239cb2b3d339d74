"""The speculative-sampling step against its laws on V = 8 toys: the emitted and bonus tokens
against p (chi-square, scipy), the accepted count against the truncated geometric law, the
mean acceptance length against the closed form, also with a pruned draft; and the
acceptance statistics, pruning and bad input against hand-worked values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from raystudy.algorithms.speculative import (
    acceptance_rate,
    acceptance_stats,
    expected_accept_length,
    prune_vocab,
    sample,
    speculative_generate,
    verify,
)

V = 8
ROWS = 120_000


def _laws(seed: int, n: int) -> torch.Tensor:
    """``n`` random laws on V tokens, every entry >= 0.03 (chi-square cells stay large)."""
    g = torch.Generator().manual_seed(seed)
    raw = torch.rand(n, V, generator=g, dtype=torch.float64) + 0.25
    return raw / raw.sum(-1, keepdim=True)


def _pvalue(tokens: torch.Tensor, law: torch.Tensor) -> float:
    """Chi-square goodness of fit of ``tokens`` (ids) against ``law (V,)``; a token of
    probability 0 must never occur (and its cell is left out of the test)."""
    counts = np.bincount(tokens.numpy(), minlength=V)
    support = law.numpy() > 0
    assert counts[~support].sum() == 0
    expected = law.numpy()[support] / law.numpy()[support].sum() * counts.sum()
    return float(stats.chisquare(counts[support], expected).pvalue)


def _run(p: torch.Tensor, q: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``verify`` on ROWS rows with per-position laws ``p (g + 1, V)``, ``q (g, V)``: drafts are
    drawn from q."""
    g = torch.Generator().manual_seed(seed)
    q_rows = q.expand(ROWS, *q.shape)
    drafts = sample(q_rows, g)
    return verify(drafts, q_rows, p.expand(ROWS, *p.shape), generator=g)


def test_closed_forms_match_hand_values():
    p = torch.tensor([0.5, 0.3, 0.2])
    q = torch.tensor([0.2, 0.3, 0.5])
    assert float(acceptance_rate(p, q)) == pytest.approx(0.7)
    assert float(acceptance_rate(p, p)) == pytest.approx(1.0)
    assert expected_accept_length(0.5, 2) == pytest.approx(1 + 0.5 + 0.25)
    assert expected_accept_length(1.0, 3) == 4.0
    assert expected_accept_length(0.0, 5) == 1.0
    alphas = torch.tensor([0.0, 0.9, 1.0])
    torch.testing.assert_close(expected_accept_length(alphas, 4),
                               torch.tensor([1.0, (1 - 0.9**5) / 0.1, 5.0]))


def test_verify_emits_the_targets_law_at_every_position():
    """Position-dependent p_j, q_j with g = 3: among rows that reach position j the token there
    is an exact draw from p_j (accepted drafts and corrections mixed; the bonus at j = g)."""
    gamma = 3
    p, q = _laws(1, gamma + 1), _laws(2, gamma)
    n, tokens = _run(p, q, seed=3)
    assert tokens.shape == (ROWS, gamma + 1) and n.shape == (ROWS,)
    positions = torch.arange(gamma + 1)
    assert bool(((tokens >= 0) == (positions <= n.unsqueeze(1))).all())  # -1 after the last
    for j in range(gamma + 1):
        reached = n >= j
        assert _pvalue(tokens[reached, j], p[j]) > 1e-3, f"position {j}"
    assert int((n == gamma).sum()) > 5_000  # the bonus cell is well populated
    # at the first rejection the token follows norm(max(0, p_j - q_j)) (Alg. 1's resample)
    for j in range(gamma):
        residual = (p[j] - q[j]).clamp_min(0)
        assert _pvalue(tokens[n == j, j], residual / residual.sum()) > 1e-3
    # the same test has power: the first token is not q_0-distributed
    assert _pvalue(tokens[:, 0], q[0]) < 1e-6


def test_accepted_count_is_truncated_geometric_and_al_is_the_closed_form():
    gamma = 4
    p1, q1 = _laws(5, 1), _laws(6, 1)
    p, q = p1.expand(gamma + 1, V), q1.expand(gamma, V)
    alpha = float(acceptance_rate(p1[0], q1[0]))
    n, tokens = _run(p, q, seed=7)
    law = np.array([alpha**k * (1 - alpha) for k in range(gamma)] + [alpha**gamma])
    counts = np.bincount(n.numpy(), minlength=gamma + 1)
    assert float(stats.chisquare(counts, law * ROWS).pvalue) > 1e-3
    lengths = (n + 1).double()
    standard_error = float(lengths.std()) / math.sqrt(ROWS)
    assert abs(float(lengths.mean()) - expected_accept_length(alpha, gamma)) < 4 * standard_error
    # i.i.d. positions: every emitted token is p-distributed, the bonus included
    assert _pvalue(tokens[n == gamma, gamma], p1[0]) > 1e-3
    assert _pvalue(tokens[:, 0], p1[0]) > 1e-3


def test_a_pruned_draft_keeps_sd_exact_and_alpha_below_the_kept_mass():
    gamma = 3
    p1 = _laws(8, 1)[0]
    keep = torch.tensor([0, 2, 5])
    q1 = prune_vocab(_laws(9, 1)[0], keep)
    alpha = float(acceptance_rate(p1, q1))
    assert alpha <= float(p1[keep].sum()) + 1e-12
    n, tokens = _run(p1.expand(gamma + 1, V), q1.expand(gamma, V), seed=10)
    for j in range(gamma + 1):
        assert _pvalue(tokens[n >= j, j], p1) > 1e-3
    accepted = tokens[torch.arange(gamma + 1) < n.unsqueeze(1)]
    assert set(accepted.unique().tolist()) <= set(keep.tolist())  # accepted drafts are kept ids
    lengths = (n + 1).double()
    standard_error = float(lengths.std()) / math.sqrt(ROWS)
    assert abs(float(lengths.mean()) - expected_accept_length(alpha, gamma)) < 4 * standard_error


def test_one_hot_laws_accept_the_argmax_prefix():
    def one_hot(ids):
        return torch.nn.functional.one_hot(torch.tensor(ids), V).double().unsqueeze(0)

    drafts = torch.tensor([[2, 5, 1]])
    n, tokens = verify(drafts, one_hot([2, 5, 1]), one_hot([2, 5, 3, 7]))
    assert n.tolist() == [2] and tokens.tolist() == [[2, 5, 3, -1]]
    n, tokens = verify(drafts, one_hot([2, 5, 1]), one_hot([2, 5, 1, 7]))
    assert n.tolist() == [3] and tokens.tolist() == [[2, 5, 1, 7]]
    n, tokens = verify(drafts, one_hot([2, 5, 1]), one_hot([4, 5, 1, 7]))
    assert n.tolist() == [0] and tokens.tolist() == [[4, -1, -1, -1]]


def test_acceptance_stats_by_hand():
    out = acceptance_stats([1, 3, 3, 2, 3], gamma=2)
    assert out["al"] == pytest.approx(12 / 5)
    assert out["histogram"] == [1, 1, 3] and out["steps"] == 5
    # reached position 1: 5 steps, accepted 4; reached 2: 4, accepted 3
    assert out["conditional"] == pytest.approx([4 / 5, 3 / 4])
    assert out["joint"] == pytest.approx([4 / 5, 3 / 5])
    never = acceptance_stats([1, 1], gamma=2)
    assert never["conditional"][0] == 0 and math.isnan(never["conditional"][1])


def test_prune_vocab_zeroes_and_renormalises():
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.0, 0.5, 0.0]])
    out = prune_vocab(probs, [1, 3])
    torch.testing.assert_close(out, torch.tensor([[0, 1 / 3, 0, 2 / 3], [0, 0.5, 0, 0.5]]))


def _one_line(error: pytest.ExceptionInfo, *words: str) -> None:
    message = str(error.value)
    assert "\n" not in message and all(w in message for w in words), message


def test_bad_input_is_one_line_naming_the_argument():
    probs = torch.full((2, 3, V), 1 / V)
    drafts = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(ValueError) as err:
        verify(drafts, probs, torch.full((2, 3, V), 1 / V))
    _one_line(err, "target_probs")
    with pytest.raises(ValueError) as err:
        verify(drafts, probs[:, :2], torch.full((2, 4, V), 1 / V))
    _one_line(err, "draft_probs")
    with pytest.raises(ValueError) as err:
        verify(drafts[0], probs, torch.full((2, 4, V), 1 / V))
    _one_line(err, "draft_tokens")
    with pytest.raises(ValueError) as err:
        prune_vocab(probs, [])
    _one_line(err, "keep")
    with pytest.raises(ValueError) as err:
        acceptance_rate(probs, probs[:, :2])
    _one_line(err, "p and q")
    for call in (lambda: expected_accept_length(0.5, 0),
                 lambda: acceptance_stats([1], gamma=0),
                 lambda: speculative_generate(_uniform, _uniform, torch.tensor([1]), 3,
                                              gamma=0)):
        with pytest.raises(ValueError) as err:
            call()
        _one_line(err, "gamma")
    with pytest.raises(ValueError) as err:
        expected_accept_length(1.5, 2)
    _one_line(err, "alpha")
    with pytest.raises(ValueError) as err:
        acceptance_stats([1, 4], gamma=2)
    _one_line(err, "step_lengths")
    with pytest.raises(ValueError) as err:
        speculative_generate(_uniform, _uniform, torch.tensor([[1]]), 3)
    _one_line(err, "prompt")
    with pytest.raises(ValueError) as err:
        speculative_generate(_uniform, _uniform, torch.tensor([1]), 3, temperature=-1.0)
    _one_line(err, "temperature")


def _uniform(idx: torch.Tensor) -> torch.Tensor:
    return torch.zeros(*idx.shape, V)
