"""A resumed trial whose saved state names a checkpoint storage no longer holds: Tune
deleted it (num_to_keep) before the run's state was saved, then the driver died."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyarrow import fs as pafs
from ray import tune
from ray.train._internal.session import _TrainingResult
from ray.tune.trainable.trainable import Trainable

from raystudy.platform.execution.trainable import resumable, surviving_checkpoint


def trial_folder(tmp_path: Path, *names: str) -> Path:
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "state.pkl").write_bytes(b"x")
    (tmp_path / "result.json").write_text("{}")             # files are not checkpoints
    return tmp_path


def test_surviving_checkpoint_is_the_oldest_after_a_lost_one(tmp_path):
    local = pafs.LocalFileSystem()
    folder = trial_folder(tmp_path, "checkpoint_000001", "checkpoint_000003",
                          "checkpoint_000002")
    assert surviving_checkpoint(local, f"{folder}/checkpoint_000002") == \
        f"{folder}/checkpoint_000002"                          # there: itself
    assert surviving_checkpoint(local, f"{folder}/checkpoint_000000") == \
        f"{folder}/checkpoint_000001"                          # gone: the next one
    assert surviving_checkpoint(local, f"{folder}/checkpoint_000004") is None
    assert surviving_checkpoint(local, f"{tmp_path}/missing/checkpoint_000000") is None


@pytest.fixture
def restored(monkeypatch) -> list:
    """What Tune's own Trainable.restore was called with (it is not run)."""
    calls: list = []
    monkeypatch.setattr(Trainable, "restore", lambda self, arg: calls.append(arg))
    return calls


def test_a_trial_resumes_from_the_next_checkpoint_or_afresh(tmp_path, restored, capsys):
    def run_trial(config):
        pass

    cls = resumable(run_trial)
    assert cls.__name__ == "run_trial"
    trainable = cls.__new__(cls)                              # restore needs no setup
    local = pafs.LocalFileSystem()
    folder = trial_folder(tmp_path, "checkpoint_000001", "checkpoint_000002")

    def result(name: str) -> _TrainingResult:
        checkpoint = tune.Checkpoint(f"{folder}/{name}", filesystem=local)
        return _TrainingResult(checkpoint=checkpoint, metrics={"training_iteration": 7})

    there = result("checkpoint_000002")
    trainable.restore(there)
    assert restored == [there]                                # untouched
    trainable.restore(result("checkpoint_000000"))
    assert restored[1].checkpoint.path == f"{folder}/checkpoint_000001"
    assert restored[1].metrics == {"training_iteration": 7}
    assert "checkpoint_000000 of this trial is gone" in capsys.readouterr().out
    trainable.restore(tune.Checkpoint(f"{folder}/checkpoint_000000", filesystem=local))
    assert restored[2].path == f"{folder}/checkpoint_000001"
    assert trainable.restore(result("checkpoint_000009")) is None
    assert len(restored) == 3 and "starts afresh" in capsys.readouterr().out
