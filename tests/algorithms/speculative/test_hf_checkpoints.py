"""Greedy speculative decoding through load_causal_lm against transformers itself: two tiny
random GPT-2 checkpoints saved to a temporary folder; SD's output equals the target's
generate(do_sample=False) and transformers' own assisted generation with the draft."""

from __future__ import annotations

import pytest
import torch

from raystudy.algorithms.speculative import load_causal_lm, speculative_generate

transformers = pytest.importorskip("transformers")

VOCAB = 48


def _save(folder, seed: int):
    torch.manual_seed(seed)
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=40, n_embd=16, n_layer=1,
                                     n_head=2, bos_token_id=None, eos_token_id=None)
    model = transformers.GPT2LMHeadModel(config).eval()
    model.save_pretrained(folder)
    return model


def test_greedy_sd_equals_generate_and_assisted_generation(tmp_path):
    target_hf = _save(tmp_path / "target", 0)
    draft_hf = _save(tmp_path / "draft", 1)
    target = load_causal_lm(tmp_path / "target")
    draft = load_causal_lm(tmp_path / "draft")
    assert target.seq_len == 40 and target.vocab_size == VOCAB
    generator = torch.Generator().manual_seed(0)
    for length in (3, 9):
        prompt = torch.randint(VOCAB, (length,), generator=generator)
        # an explicit mask: generate would otherwise take prompt tokens equal to the pad id
        # for padding
        common = {"attention_mask": torch.ones(1, length, dtype=torch.long),
                  "max_new_tokens": 24, "do_sample": False, "pad_token_id": 0}
        with torch.no_grad():
            greedy = target_hf.generate(prompt[None], **common)[0]
            assisted = target_hf.generate(prompt[None], assistant_model=draft_hf, **common)[0]
        assert torch.equal(assisted, greedy)
        for drafter, gamma in ((draft, 3), (target, 5)):
            out = speculative_generate(target, drafter, prompt, 24, gamma=gamma, temperature=0)
            assert torch.equal(out.tokens, greedy)
            assert sum(out.step_lengths) == 24
        assert out.accepted == [5] * len(out.accepted)  # the target as its own draft
