"""``raystudy data`` generators, called as the CLI calls them: real files out, bad
output folders and sizes one line (no Ray)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from raystudy.errors import DataError, UserError
from raystudy.studies.optimizer_robustness.data import make_token_dataset


def test_tokens_from_a_text_folder_and_bad_requests(tmp_path: Path) -> None:
    source = tmp_path / "text"
    source.mkdir()
    (source / "a.txt").write_text("hello raystudy " * 400)
    out = make_token_dataset(str(tmp_path / "tokens"), str(source), seq_len=8, max_bytes=4000)
    train = np.load(Path(out) / "train.npy")
    assert train.ndim == 2 and train.shape[1] == 8 + 1 and train.max() < 256  # input + target
    with pytest.raises(DataError, match="--seq-len >= 2"):
        make_token_dataset(str(tmp_path / "x"), str(source), seq_len=1, max_bytes=4000)
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="is a file, not a folder"):
        make_token_dataset(str(tmp_path / "file" / "out"), str(source), seq_len=8,
                           max_bytes=4000)
