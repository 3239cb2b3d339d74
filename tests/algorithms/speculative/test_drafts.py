"""The byte n-gram draft against counts taken by hand with a dict (add-k, backoff to the
longest seen context), the pruned draft against prune_vocab of the full draft's softmax,
and the top-m vocabulary against hand counts."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from raystudy.algorithms.speculative import (
    ByteNGramDraft,
    PrunedDraft,
    next_token_logits,
    probabilities,
    prune_vocab,
    top_tokens,
)

TEXT = b"abracadabra, abracadabra; cabbage"


def _by_hand(text: bytes, order: int, k: float, history: bytes) -> np.ndarray:
    """q(. | history) from dict counts: the longest context (<= order - 1 bytes) seen in
    ``text`` with a successor, add-k over 256 bytes."""
    for m in range(min(order - 1, len(history)), -1, -1):
        context = history[len(history) - m:]
        following = Counter(text[i + m] for i in range(len(text) - m)
                            if text[i:i + m] == context)
        if following:
            counts = np.zeros(256)
            for byte, c in following.items():
                counts[byte] = c
            return (counts + k) / (counts.sum() + 256 * k)
    raise AssertionError("the unigram context is always seen")


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_ngram_law_equals_hand_counts_with_backoff(order):
    k = 0.5
    draft = ByteNGramDraft(order, k=k).fit(np.frombuffer(TEXT, dtype=np.uint8))
    assert draft.seq_len == max(order - 1, 1)
    # seen contexts, an unseen 3-byte context ("zca" -> "ca" seen), unseen bytes ("zz")
    queries = [b"abr", b"ra,", b"zca", b"zzz", b"c", b"a;", b"be"]
    for query in queries:
        idx = torch.tensor([list(query)])
        law = draft(idx)[0, -1].exp().double().numpy()
        np.testing.assert_allclose(law, _by_hand(TEXT, order, k, query), rtol=1e-5)
    # every position of a longer sequence at once
    idx = torch.tensor([list(b"cadabra abra")])
    laws = draft(idx)[0].exp().double().numpy()
    for t in range(idx.shape[1]):
        np.testing.assert_allclose(laws[t], _by_hand(TEXT, order, k, b"cadabra abra"[:t + 1]),
                                   rtol=1e-5)


def test_ngram_is_a_cropped_model_for_decoding():
    draft = ByteNGramDraft(3).fit(np.frombuffer(TEXT, dtype=np.uint8))
    history = torch.tensor(list(b"xyz abracad"))
    logits = next_token_logits(draft, history, n=3)
    expected = torch.stack([draft(history[None, :t])[0, -1] for t in (9, 10, 11)])
    torch.testing.assert_close(logits, expected)


def test_pruned_draft_is_prune_vocab_of_the_drafts_softmax():
    draft = ByteNGramDraft(2, k=0.1).fit(np.frombuffer(TEXT, dtype=np.uint8))
    keep = torch.tensor([ord("a"), ord("b"), ord("c"), ord(" ")])
    pruned = PrunedDraft(draft, keep, 256)
    assert pruned.seq_len == draft.seq_len
    idx = torch.tensor([list(b"abracadabra")])
    for temperature in (1.0, 0.7):
        torch.testing.assert_close(
            probabilities(pruned(idx), temperature),
            prune_vocab(probabilities(draft(idx), temperature), keep))
    greedy = probabilities(pruned(idx), 0.0).argmax(-1)
    assert set(greedy.flatten().tolist()) <= set(keep.tolist())
    # after "b" the full draft says "r"; the pruned one the likeliest kept byte
    assert int(probabilities(draft(idx), 0.0)[0, 1].argmax()) == ord("r")
    with pytest.raises(ValueError, match="keep is empty"):
        PrunedDraft(draft, [], 256)


def test_top_tokens_by_count_then_id():
    tokens = np.array([5, 5, 5, 2, 2, 9, 9, 7])
    assert top_tokens(tokens, 1, vocab_size=10).tolist() == [5]
    assert top_tokens(tokens, 2, vocab_size=10).tolist() == [2, 5]  # 2 beats 9 on the tie
    assert top_tokens(tokens, 4, vocab_size=10).tolist() == [2, 5, 7, 9]
    assert top_tokens(tokens, 5, vocab_size=10).tolist() == [0, 2, 5, 7, 9]  # unseen: by id
    with pytest.raises(ValueError, match="m=0"):
        top_tokens(tokens, 0, vocab_size=10)


def test_bad_ngram_input_is_one_line():
    with pytest.raises(ValueError, match="order"):
        ByteNGramDraft(0)
    with pytest.raises(ValueError, match="k="):
        ByteNGramDraft(2, k=0.0)
    with pytest.raises(ValueError, match="not fitted"):
        ByteNGramDraft(2)(torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="tokens must lie"):
        ByteNGramDraft(2, vocab_size=4).fit(np.array([1, 2, 7]))
