"""The shared Hugging Face loader against transformers itself: tiny random GPT-2 and BERT
checkpoints saved to a temporary folder, loaded back through load_causal_lm /
load_encoder / load_tokenizer, and the one-line errors for what is missing."""

from __future__ import annotations

import builtins

import pytest
import torch

from raystudy.algorithms.models.hf import (
    checkpoint_folder,
    load_causal_lm,
    load_encoder,
    load_tokenizer,
)
from raystudy.errors import ConfigError, MissingDataError

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=50, n_positions=32, n_embd=16, n_layer=2,
                                     n_head=2)
    model = transformers.GPT2LMHeadModel(config).eval()
    folder = tmp_path_factory.mktemp("gpt2")
    model.save_pretrained(folder)
    return folder, model


def test_a_causal_lm_gives_the_checkpoints_own_logits_and_greedy_decoding(gpt2_folder):
    folder, reference = gpt2_folder
    lm = load_causal_lm(folder)
    assert (lm.seq_len, lm.vocab_size) == (32, 50)
    idx = torch.randint(50, (3, 7), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = reference(input_ids=idx).logits
        logits = lm(idx)
    assert logits.shape == (3, 7, 50) and logits.dtype == torch.float32
    torch.testing.assert_close(logits, expected, rtol=0, atol=1e-6)
    # greedy decoding by the wrapper's logits equals transformers' generate(do_sample=False)
    prompt = idx[:1, :4]
    out = prompt
    with torch.no_grad():
        for _ in range(6):
            out = torch.cat([out, lm(out)[:, -1].argmax(-1, keepdim=True)], dim=1)
        generated = reference.generate(prompt, max_new_tokens=6, do_sample=False,
                                       pad_token_id=0)
    assert torch.equal(out, generated)


def test_an_encoder_returns_the_backbones_last_hidden_states(tmp_path):
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32,
                                     max_position_embeddings=24)
    reference = transformers.BertModel(config).eval()
    reference.save_pretrained(tmp_path)
    encoder = load_encoder(tmp_path).eval()
    idx = torch.randint(40, (2, 5), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(encoder(idx), reference(input_ids=idx).last_hidden_state)
    assert (encoder.hidden_size, encoder.seq_len) == (16, 24)


def test_the_tokenizer_saved_with_a_checkpoint_is_read_back(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"[UNK]": 0, "a": 1, "b": 2, "ab": 3}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]")
    fast.save_pretrained(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    assert load_tokenizer(tmp_path)("a ab zz")["input_ids"] == [1, 3, 0]


def test_what_is_missing_is_one_line_naming_the_path(tmp_path, monkeypatch):
    with pytest.raises(MissingDataError, match="no such folder") as missing:
        load_causal_lm(tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(missing.value) and "\n" not in str(missing.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingDataError, match="no config.json"):
        load_encoder(tmp_path / "empty")
    with pytest.raises(MissingDataError, match="no folder given"):
        checkpoint_folder("")
    (tmp_path / "empty" / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="dtype"):
        load_causal_lm(tmp_path / "empty", dtype="float8")
    real_import = builtins.__import__

    def without_transformers(name, *args, **kwargs):
        if name == "transformers":
            raise ModuleNotFoundError("No module named 'transformers'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_transformers)
    with pytest.raises(ConfigError, match=r"pip install 'raystudy\[judge\]'"):
        load_encoder(tmp_path / "empty", extra="judge")
