"""Byte-level prompt domains from text every machine has (Python's standard library), and
JSONL prompt files: raystudy's stand-ins for SPEED-Bench's categories, labelled so.

* ``code``: the stdlib's ``.py`` sources (sorted path order, ``site-packages`` left out, as
  :func:`raystudy.algorithms.text.text_bytes` walks them) with every module, class and
  function docstring removed.
* ``prose``: the ``pydoc_data`` help topics (sorted by name), then those docstrings
  (``inspect.cleandoc``-ed, blank-line separated).
* ``longtail``: ``prose`` transliterated letter by letter into Cyrillic or Greek, the script
  chosen per word by the CRC-32 of the word (so a word always gets the same script): every
  letter becomes two UTF-8 bytes. A stand-in for multilingual text, 5 % of the training bytes.
* ``random``: uniform random bytes (prompts only), the "random-token" inputs.
* ``file``: a folder of ``*.jsonl`` prompts with a ``category`` field (for example a locally
  materialised SPEED-Bench split), read by :func:`read_prompt_files`.

Each text domain is split contiguously: its last ``held_out_bytes`` are held out, and prompts
are windows of the held-out part at seeded offsets (the training mixture never holds them).
Everything is deterministic per seed.
"""

from __future__ import annotations

import ast
import inspect
import json
import sysconfig
import zlib
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ...errors import DataError, MissingDataError
from ..text import _sorted_files

DOMAINS = ("code", "prose", "longtail", "random")
TEXT_DOMAINS = ("code", "prose", "longtail")

_LATIN = "abcdefghijklmnopqrstuvwxyz"
_CYRILLIC = "абцдефгхийклмнопярстувшжыз"
_GREEK = "αβψδεφγηιξκλμνοπϙρστθωϝχυζ"
_TO_CYRILLIC = str.maketrans(_LATIN + _LATIN.upper(), _CYRILLIC + _CYRILLIC.upper())
_TO_GREEK = str.maketrans(_LATIN + _LATIN.upper(), _GREEK + _GREEK.upper())


def transliterate(text: str) -> str:
    """Latin letters to Cyrillic or Greek, per word (a maximal run of ASCII letters) by the
    parity of the word's CRC-32; everything else unchanged."""
    out, word = [], []
    for ch in text + "\0":
        if ch.isascii() and ch.isalpha():
            word.append(ch)
            continue
        if word:
            w = "".join(word)
            table = _TO_CYRILLIC if zlib.crc32(w.encode()) % 2 == 0 else _TO_GREEK
            out.append(w.translate(table))
            word = []
        out.append(ch)
    return "".join(out[:-1])


def _docstring_nodes(tree: ast.Module) -> list[ast.Expr]:
    """The docstring statements of a module and of every class and function in it, in
    source order."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                found.append(body[0])
    return sorted(found, key=lambda node: (node.lineno, node.col_offset))


def _split_source(source: bytes) -> tuple[bytes, list[str]]:
    """``source`` without its docstrings (each whole-line docstring dropped, or ``pass`` where it
    was the only statement) and the cleaned docstrings; ``(b"", [])`` when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return b"", []
    lines = source.splitlines(keepends=True)
    drop: dict[int, bytes] = {}
    docs = []
    parents = {id(n.body[0]): n for n in ast.walk(tree)
               if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef)) and n.body}
    for node in _docstring_nodes(tree):
        docs.append(inspect.cleandoc(node.value.value))  # type: ignore[attr-defined]
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        before = lines[first][: node.col_offset]
        after = lines[last][node.end_col_offset or 0:]
        if before.strip() or after.strip():
            continue  # shares a line with other code: left in place
        alone = len(parents[id(node)].body) == 1
        for i in range(first, last + 1):
            drop[i] = before + b"pass\n" if alone and i == first else b""
    code = b"".join(drop.get(i, line) for i, line in enumerate(lines))
    return code, docs


@lru_cache(maxsize=4)
def stdlib_domains(code_bytes: int, prose_bytes: int) -> tuple[bytes, bytes]:
    """``(code, prose)``: at least the given number of bytes of each (fewer only if the stdlib
    runs out), cut to exactly that many; ``prose`` starts with the ``pydoc_data`` topics."""
    from pydoc_data.topics import topics

    prose = [("\n\n".join(topics[k] for k in sorted(topics)) + "\n\n").encode()]
    code: list[bytes] = []
    n_code, n_prose = 0, len(prose[0])
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in _sorted_files(root, (".py",)):
        if n_code >= code_bytes and n_prose >= prose_bytes:
            break
        source, docs = _split_source(path.read_bytes())
        if n_code < code_bytes:
            code.append(source)
            n_code += len(source)
        if n_prose < prose_bytes and docs:
            prose.append(("\n\n".join(docs) + "\n\n").encode())
            n_prose += len(prose[-1])
    return b"".join(code)[:code_bytes], b"".join(prose)[:prose_bytes]


def _utf8_start(data: bytes, i: int) -> int:
    """The first index >= ``i`` that starts a UTF-8 character (not a 10xxxxxx byte)."""
    while i < len(data) and 0x80 <= data[i] < 0xC0:
        i += 1
    return i


def domain_texts(train_bytes: int = 1_500_000, *, longtail_fraction: float = 0.05,
                 held_out_bytes: int = 65_536) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per text domain ``(train, held_out)`` uint8 arrays: ``longtail`` has
    ``longtail_fraction`` of ``train_bytes``, ``code`` and ``prose`` half the rest each; each
    domain's held-out part is its next ``held_out_bytes`` bytes (a contiguous split)."""
    if not 0 < longtail_fraction < 1:
        raise ValueError(f"longtail_fraction={longtail_fraction} must lie in (0, 1)")
    if train_bytes < 16 or held_out_bytes < 16:
        raise ValueError(f"train_bytes={train_bytes} and held_out_bytes={held_out_bytes} "
                         "must be >= 16")
    n_long = int(round(train_bytes * longtail_fraction))
    n_code = (train_bytes - n_long) // 2
    n_prose = train_bytes - n_long - n_code
    code, prose = stdlib_domains(n_code + held_out_bytes, n_prose + held_out_bytes)
    # longtail: the same prose, transliterated; cut at character boundaries
    # every letter grows to two bytes, so n_long source bytes give at least n_long
    long_train = transliterate(prose[:n_long].decode("utf-8", "ignore")).encode()
    long_held = transliterate(prose[n_prose:].decode("utf-8", "ignore")).encode()
    cut = _utf8_start(long_train, n_long)
    parts = {"code": (code[:n_code], code[n_code:]), "prose": (prose[:n_prose], prose[n_prose:]),
             "longtail": (long_train[:cut], long_held[:held_out_bytes])}
    for name, (train, held) in parts.items():
        if len(held) < held_out_bytes // 2:
            raise DataError(f"domain {name}: only {len(train)} + {len(held)} bytes of stdlib text "
                            "(too few for the requested sizes)")
    return {name: (np.frombuffer(t, dtype=np.uint8).copy(), np.frombuffer(h, dtype=np.uint8).copy())
            for name, (t, h) in parts.items()}


def prompts_from(text: np.ndarray, n_prompts: int, prompt_len: int, seed: int) -> Tensor:
    """``n_prompts`` windows of ``prompt_len`` bytes of ``text (N,)`` at seeded offsets, each
    moved forward to a UTF-8 character start; ``(n_prompts, prompt_len)`` long."""
    data = bytes(text)
    if len(data) < prompt_len + 8:
        raise ValueError(f"text of {len(data)} bytes is too short for prompt_len={prompt_len}")
    rng = np.random.default_rng(seed)
    rows = []
    for start in rng.integers(0, len(data) - prompt_len - 4, size=n_prompts).tolist():
        s = min(_utf8_start(data, start), len(data) - prompt_len)
        rows.append(np.frombuffer(data[s: s + prompt_len], dtype=np.uint8))
    return torch.from_numpy(np.stack(rows).astype(np.int64))


def random_prompts(n_prompts: int, prompt_len: int, seed: int) -> Tensor:
    """Uniform random bytes, ``(n_prompts, prompt_len)`` long, from ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(256, (n_prompts, prompt_len), generator=generator)


def domain_data(seed: int, *, train_bytes: int = 1_500_000, n_prompts: int = 24,
                prompt_len: int = 64, longtail_fraction: float = 0.05,
                held_out_bytes: int = 65_536) -> tuple[np.ndarray, dict[str, Tensor]]:
    """``(train, prompts)``: the training mixture (uint8; ``code``, ``prose``, then ``longtail``
    at ``longtail_fraction`` of its bytes) and held-out prompts per domain in :data:`DOMAINS`,
    each ``(n_prompts, prompt_len)`` long. The mixture is the same for every seed; the prompts
    are drawn from ``seed``."""
    if n_prompts < 1 or prompt_len < 1:
        raise ValueError(f"n_prompts={n_prompts} and prompt_len={prompt_len} must be >= 1")
    texts = domain_texts(train_bytes, longtail_fraction=longtail_fraction,
                         held_out_bytes=held_out_bytes)
    train = np.concatenate([texts[name][0] for name in TEXT_DOMAINS])
    prompts = {name: prompts_from(texts[name][1], n_prompts, prompt_len, seed + 1000 * i)
               for i, name in enumerate(TEXT_DOMAINS)}
    prompts["random"] = random_prompts(n_prompts, prompt_len, seed)
    return train, prompts


def read_prompt_files(folder: str | Path) -> dict[str, list[str]]:
    """Prompts by category from every ``*.jsonl`` file under ``folder`` (sorted paths, file
    order within). A row is a JSON object with a ``category`` string and its text in
    ``prompt``, ``text`` or ``turns`` (a list of strings: the first turn)."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise MissingDataError(f"prompt folder {root}: no such folder (JSONL files with a "
                               "'category' field)")
    files = sorted(root.rglob("*.jsonl"))
    if not files:
        raise MissingDataError(f"prompt folder {root}: no *.jsonl files")
    prompts: dict[str, list[str]] = {}
    for path in files:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                category, text = _prompt_row(line, f"{path}:{number}")
                prompts.setdefault(category, []).append(text)
    if not prompts:
        raise DataError(f"prompt folder {root}: the *.jsonl files hold no rows")
    return prompts


def _prompt_row(line: str, where: str) -> tuple[str, str]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as err:
        raise DataError(f"{where}: not JSON ({err.msg})") from None
    if not isinstance(row, dict) or not isinstance(row.get("category"), str):
        raise DataError(f"{where}: needs a 'category' string field")
    turns = row.get("turns")
    if isinstance(row.get("prompt"), str):
        text = row["prompt"]
    elif isinstance(row.get("text"), str):
        text = row["text"]
    elif isinstance(turns, list) and turns and isinstance(turns[0], str):
        text = turns[0]
    else:
        raise DataError(f"{where}: no prompt text ('prompt', 'text' or 'turns' field)")
    if not text:
        raise DataError(f"{where}: empty prompt text")
    return row["category"], text


def encode_bytes(text: str) -> Tensor:
    """UTF-8 bytes of ``text`` as a ``(len,)`` long tensor (the byte models' tokens)."""
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)
