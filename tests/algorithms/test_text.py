"""The byte corpus reads files in ``sorted(Path)`` order, as a full ``rglob`` listing
would, while listing only what it reads."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import numpy as np
import pytest

from raystudy.algorithms.text import text_bytes


def rglob_reference(root: Path, patterns: tuple[str, ...], max_bytes: int) -> bytes:
    """The whole listing, sorted, ``site-packages`` dropped, then cut at ``max_bytes``."""
    files = sorted(p for pattern in patterns for p in root.rglob(pattern) if p.is_file()
                   and "site-packages" not in p.relative_to(root).parts)
    return b"".join(p.read_bytes() for p in files)[:max_bytes]


def test_folder_order_is_sorted_path_order(tmp_path):
    names = ["b.py", "b/x.py", "b/a.md", "B.py", "a-b/c.txt", "a_b.py", "ab/z.py",
             "site-packages/skip.py", "deep/site-packages/skip.md", "c/notes.rst",
             "dir.py/inner.py", "é.txt", "z.md"]
    for i, name in enumerate(names):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(f"<{i}:{name}>".encode())
    got = text_bytes(str(tmp_path), max_bytes=10_000).tobytes()
    assert got == rglob_reference(tmp_path, ("*.py", "*.txt", "*.md"), 10_000)
    assert b"skip" not in got and b"notes.rst" not in got
    assert text_bytes(str(tmp_path), max_bytes=17).tobytes() == got[:17]


def test_stdlib_corpus_equals_the_full_listing():
    root = Path(sysconfig.get_paths()["stdlib"])
    got = text_bytes("stdlib", 300_000)
    assert got.dtype == np.uint8 and len(got) == 300_000
    assert got.tobytes() == rglob_reference(root, ("*.py",), 300_000)


def test_missing_or_empty_folder_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        text_bytes(str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match="no text files"):
        text_bytes(str(tmp_path))
