"""The byte domains: docstrings out of code and into prose (hand-written source), the
transliteration (hand-checked letters, one script per word), the training mixture's
longtail share, held-out prompts drawn from the held-out part only, uniform random
prompts (chi-square), determinism per seed, and JSONL prompt files with their one-line
errors."""

from __future__ import annotations

import ast
import json

import numpy as np
import pytest
import torch
from scipy import stats

from raystudy.algorithms.speculative import (
    DOMAINS,
    domain_data,
    domain_texts,
    encode_bytes,
    random_prompts,
    read_prompt_files,
    stdlib_domains,
    transliterate,
)
from raystudy.algorithms.speculative.domains import _split_source
from raystudy.errors import DataError, MissingDataError

SMALL = {"train_bytes": 40_000, "held_out_bytes": 4_096}

SOURCE = b'''"""Module doc."""
import os


class Only:
    """Only a docstring."""


class Two:
    """Class doc
    on two lines."""

    x = 1

    def f(self):
        """Method doc."""
        return "not a docstring"


def g(): "same line"; return 2
'''


def test_docstrings_leave_code_and_become_prose():
    code, docs = _split_source(SOURCE)
    assert docs == ["Module doc.", "Only a docstring.", "Class doc\non two lines.",
                    "Method doc.", "same line"]
    tree = ast.parse(code)
    with_docs = [node for node in ast.walk(tree)
                 if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
                 and ast.get_docstring(node) and node.name != "g"]  # type: ignore[union-attr]
    assert with_docs == []
    assert b"not a docstring" in code and b"import os" in code and b"x = 1" in code
    assert b"class Only:\n    pass\n" in code  # the sole statement becomes pass
    assert b'def g(): "same line"; return 2' in code  # shares its line: left in place
    assert _split_source(b"def broken(:\n") == (b"", [])


def test_transliteration_is_letterwise_and_one_script_per_word():
    text = "The cat sat. The CAT, the cat!"
    out = transliterate(text)
    assert len(out) == len(text)
    assert not any(ch.isascii() and ch.isalpha() for ch in out)
    words = out.replace(",", " ").replace(".", " ").replace("!", " ").split()
    assert words[1] == words[6]  # "cat" twice, the same script
    for ch in out:
        if ch.isalpha():
            assert "CYRILLIC" in _name(ch) or "GREEK" in _name(ch)
            assert len(ch.encode()) == 2
    # both scripts occur on ordinary prose
    sample = transliterate("the quick brown fox jumps over the lazy dog and then sleeps")
    assert any("CYRILLIC" in _name(c) for c in sample) and any("GREEK" in _name(c)
                                                              for c in sample)
    assert transliterate("a-b 12 ü") == transliterate("a-b 12 ü")  # deterministic


def _name(ch: str) -> str:
    import unicodedata

    return unicodedata.name(ch)


def test_texts_split_contiguously_and_longtail_is_five_percent():
    texts = domain_texts(**SMALL)
    code, prose = stdlib_domains(19_000 + 4_096, 19_000 + 4_096)
    assert bytes(texts["code"][0]) + bytes(texts["code"][1]) == code
    assert bytes(texts["prose"][0]) + bytes(texts["prose"][1]) == prose
    train, held = texts["longtail"]
    assert abs(len(train) - 2_000) <= 1 and len(held) == 4_096
    decoded = bytes(train).decode("utf-8")  # cut at a character boundary
    letters = [ch for ch in decoded if ch.isalpha()]
    assert letters and not any(ch.isascii() for ch in letters)
    assert (np.asarray(train) >= 0x80).mean() > 0.5  # mostly multi-byte characters
    assert b"def " in bytes(texts["code"][0]) and b'"""' not in bytes(texts["code"][0])[:2000]


def test_prompts_come_from_the_held_out_part_and_are_seeded():
    train, prompts = domain_data(3, n_prompts=10, prompt_len=48, **SMALL)
    texts = domain_texts(**SMALL)
    assert set(prompts) == set(DOMAINS)
    assert len(train) == sum(len(texts[d][0]) for d in ("code", "prose", "longtail"))
    for name in ("code", "prose", "longtail"):
        assert prompts[name].shape == (10, 48) and prompts[name].dtype == torch.long
        held = bytes(texts[name][1])
        for row in prompts[name]:
            assert bytes(row.tolist()) in held
        if name == "longtail":
            assert all(not 0x80 <= int(row[0]) < 0xC0 for row in prompts[name])
    again_train, again = domain_data(3, n_prompts=10, prompt_len=48, **SMALL)
    assert np.array_equal(train, again_train)
    assert all(torch.equal(prompts[d], again[d]) for d in DOMAINS)
    _, other = domain_data(4, n_prompts=10, prompt_len=48, **SMALL)
    assert not torch.equal(prompts["code"], other["code"])
    assert np.array_equal(domain_data(4, n_prompts=10, prompt_len=48, **SMALL)[0], train)


def test_random_prompts_are_uniform_bytes():
    prompts = random_prompts(64, 80, seed=0)
    assert prompts.shape == (64, 80) and int(prompts.min()) >= 0 and int(prompts.max()) < 256
    counts = np.bincount(prompts.flatten().numpy(), minlength=256)
    assert stats.chisquare(counts).pvalue > 1e-3
    assert torch.equal(prompts, random_prompts(64, 80, seed=0))
    assert not torch.equal(prompts, random_prompts(64, 80, seed=1))


def test_prompt_files_by_category(tmp_path):
    (tmp_path / "b.jsonl").write_text(
        json.dumps({"category": "coding", "turns": ["def f():", "second turn"]}) + "\n\n"
        + json.dumps({"category": "writing", "text": "Once upon"}) + "\n")
    sub = tmp_path / "a"
    sub.mkdir()
    (sub / "x.jsonl").write_text(json.dumps({"category": "coding", "prompt": "print(1)"}))
    (tmp_path / "ignored.txt").write_text("not read")
    prompts = read_prompt_files(tmp_path)
    assert prompts == {"coding": ["print(1)", "def f():"], "writing": ["Once upon"]}
    assert encode_bytes("aé").tolist() == [97, 0xC3, 0xA9]


@pytest.mark.parametrize(("line", "words"), [
    ("{not json", "not JSON"),
    ('{"prompt": "x"}', "category"),
    ('{"category": "c"}', "no prompt text"),
    ('{"category": "c", "turns": []}', "no prompt text"),
    ('{"category": "c", "prompt": ""}', "empty prompt"),
])
def test_bad_prompt_rows_are_one_line_naming_file_and_line(tmp_path, line, words):
    (tmp_path / "p.jsonl").write_text('{"category": "c", "prompt": "ok"}\n' + line + "\n")
    with pytest.raises(DataError) as err:
        read_prompt_files(tmp_path)
    message = str(err.value)
    assert "\n" not in message and words in message and f"{tmp_path / 'p.jsonl'}:2" in message


def test_missing_prompt_folders_are_one_line(tmp_path):
    with pytest.raises(MissingDataError, match="no such folder"):
        read_prompt_files(tmp_path / "nowhere")
    with pytest.raises(MissingDataError, match="no \\*.jsonl"):
        read_prompt_files(tmp_path)
