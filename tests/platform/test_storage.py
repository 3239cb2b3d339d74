"""Storage URIs: joining with the query kept, and every operation on a real S3-compatible
server (moto on loopback) and on a local folder; run folders found and cleaned on S3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raystudy.contract import storage
from raystudy.errors import UserError
from raystudy.platform.runs.rundir import (
    find_resumable,
    has_run_state,
    remove_failed_start,
    trial_counts,
    unfinished,
)

EP = "endpoint_override=http://127.0.0.1:9000&region=us-east-1"


@pytest.mark.parametrize("location,parts,expected", [
    (f"s3://b/runs?{EP}", ("r1", "train"), f"s3://b/runs/r1/train?{EP}"),
    (f"s3://b/runs/?{EP}", ("r1/",), f"s3://b/runs/r1?{EP}"),
    (f"s3://b?{EP}", ("runs", "r1"), f"s3://b/runs/r1?{EP}"),
    ("s3://b/runs", ("r1", "raystudy.json"), "s3://b/runs/r1/raystudy.json"),
    ("s3://b/runs/", ("/r1/",), "s3://b/runs/r1"),
    ("gs://bucket/a/b", ("c",), "gs://bucket/a/b/c"),
    ("gs://bucket", (), "gs://bucket"),
    ("file:///tmp/runs", ("r1",), "file:///tmp/runs/r1"),
    ("/tmp/runs", ("r1", "train"), "/tmp/runs/r1/train"),
    ("/tmp/runs/", ("r1",), "/tmp/runs/r1"),
    ("runs", ("r1",), "runs/r1"),
])
def test_join_keeps_the_query_at_the_end(location, parts, expected):
    assert storage.join(location, *parts) == expected


def test_name_root_and_remote():
    assert storage.name(f"s3://b/runs/r1?{EP}") == "r1"
    assert storage.name("/tmp/runs/r1/") == "r1"
    assert storage.root(f"s3://b/runs?{EP}") == f"s3://b/runs?{EP}"
    assert storage.root("runs") == str(Path("runs").absolute())
    assert storage.is_remote("gs://b/x") and not storage.is_remote("/tmp/x")


def test_a_query_key_pyarrow_does_not_know_is_one_line():
    with pytest.raises(UserError, match=r"cannot open s3://b/x\?endpoint=.*Unexpected query"):
        storage.filesystem("s3://b/x?endpoint=http://127.0.0.1:1")


def test_data_source_moves_the_endpoint_into_the_filesystem(s3_server):
    path, fs = storage.data_source(s3_server.uri(prefix="data/train.npy"))
    assert path == f"s3://{s3_server.bucket}/data/train.npy"  # the query is in fs
    assert fs.region == "us-east-1"
    assert storage.data_source("data/x.npy") == (str(Path("data/x.npy").absolute()), None)


def test_read_write_list_and_copy_on_s3(s3_server, tmp_path):
    root = s3_server.uri(prefix="runs")
    run = storage.join(root, "r1")
    storage.check_writable(root, "--storage")
    assert not storage.exists(run)
    storage.write_json(storage.join(run, "raystudy.json"), {"study": "s"})
    storage.write_text(storage.join(run, "trial_a", "result.json"), "{}\n")
    assert storage.read_json(storage.join(run, "raystudy.json")) == {"study": "s"}
    assert storage.exists(run) and storage.list_dirs(root) == ["r1"]
    assert storage.list_dirs(run) == ["trial_a"]
    assert list(storage.list_files(run)) == ["raystudy.json"]
    assert storage.list_files(run, "*.txt") == {}
    assert storage.list_files(run)["raystudy.json"] > 0  # the object's mtime

    top = storage.download(run, tmp_path / "top", recursive=False)
    assert sorted(p.name for p in top.iterdir()) == ["raystudy.json"]
    copy = storage.download(run, tmp_path / "copy")
    assert (copy / "trial_a" / "result.json").read_text() == "{}\n"
    (copy / "figures").mkdir()
    (copy / "figures" / "f.png").write_bytes(b"png")
    storage.upload(copy, run)
    assert s3_server.keys("runs/r1") == ["figures/f.png", "raystudy.json", "trial_a/result.json"]
    with pytest.raises(UserError, match="cannot read .*missing.json"):
        storage.read_text(storage.join(run, "missing.json"))
    storage.remove(run)
    assert s3_server.keys("runs") == []  # and the probe object did not stay behind


def test_the_same_functions_work_on_a_local_folder(tmp_path):
    run = str(tmp_path / "runs" / "r1")
    storage.write_json(storage.join(run, "raystudy.json"), {"study": "s"})
    assert storage.exists(run) and storage.list_dirs(str(tmp_path / "runs")) == ["r1"]
    assert storage.read_json(storage.join(run, "raystudy.json")) == {"study": "s"}
    with storage.local_copy(run) as copy:
        assert copy == Path(run)  # no copy of a local folder
    storage.write_text(storage.join(run, "bad.json"), "{")
    with pytest.raises(UserError, match="bad.json is corrupt"):
        storage.read_json(storage.join(run, "bad.json"))


def test_unknown_bucket_is_one_line(s3_server):
    with pytest.raises(UserError, match=r"--storage s3://no-such-bucket/runs\?.* is not "
                       r"writable: .*(not found|NoSuchBucket|NO_SUCH_BUCKET)") as info:
        storage.check_writable(s3_server.uri("no-such-bucket", "runs"), "--storage")
    assert "\n" not in str(info.value)


def test_aws_env_takes_only_the_variables_that_are_set():
    env = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "",
           "AWS_REGION": "eu-west-1", "AWS_PROFILE": "p", "HOME": "/root"}
    assert storage.aws_env(env) == {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
                                    "AWS_REGION": "eu-west-1"}


def _fake_run(s3, name: str, study: str = "optimizer_robustness", state: bool = True,
              status: str = "PENDING", summary: dict | None = None) -> str:
    run = storage.join(s3.uri(prefix="runs"), name)
    storage.write_json(storage.join(run, "raystudy.json"), {"study": study, "kind": "sweep"})
    if state:
        trials = [[json.dumps({"status": "TERMINATED", "trial_id": "a"}), "{}"],
                  [json.dumps({"status": status, "trial_id": "b"}), "{}"]]
        storage.write_json(storage.join(run, "experiment_state-2026.json"),
                           {"trial_data": trials})
    if summary is not None:
        storage.write_json(storage.join(run, "summary.json"), {"counts": summary})
    return run


def test_resume_candidates_and_failed_starts_on_s3(s3_server):
    root = s3_server.uri(prefix="runs")
    assert find_resumable(root, "optimizer_robustness") is None
    _fake_run(s3_server, "done", status="TERMINATED", summary={"finished": 2, "unfinished": 0})
    _fake_run(s3_server, "other", study="plasticity")
    real = _fake_run(s3_server, "real")  # the one with Tune state and unfinished trials
    leftover = _fake_run(s3_server, "leftover", state=False)
    assert find_resumable(root, "optimizer_robustness") == real
    assert has_run_state(real) and not has_run_state(leftover)
    assert trial_counts(real) == (1, 2)
    assert unfinished(real) and not unfinished(storage.join(root, "done"))
    remove_failed_start(leftover)
    remove_failed_start(real)
    assert storage.list_dirs(root) == ["done", "other", "real"]
