"""``raystudy submit``'s job environment, without a cluster: the ``AWS_*`` variables set
here travel in the job's runtime_env, named on stderr and never printed."""

from __future__ import annotations

import pytest

from raystudy.errors import UserError
from raystudy.platform.cluster import jobs

SECRET = "wJalrXUtnFEMI-not-a-real-secret"


def test_job_env_forwards_the_aws_variables_that_are_set_and_env_pairs_win():
    here = {"AWS_ACCESS_KEY_ID": "AKIA1", "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_SESSION_TOKEN": "", "AWS_ENDPOINT_URL": "http://minio:9000",
            "AWS_REGION": "eu-west-1", "AWS_PROFILE": "dev", "PATH": "/bin"}
    env, forwarded = jobs.job_env(["AWS_REGION=us-east-1", "X=1"], here)
    assert env == {"AWS_ACCESS_KEY_ID": "AKIA1", "AWS_SECRET_ACCESS_KEY": SECRET,
                   "AWS_ENDPOINT_URL": "http://minio:9000", "AWS_REGION": "us-east-1", "X": "1"}
    assert forwarded == ["AWS_ACCESS_KEY_ID", "AWS_ENDPOINT_URL", "AWS_SECRET_ACCESS_KEY"]
    assert jobs.job_env([], {"PATH": "/bin"}) == ({}, [])
    with pytest.raises(UserError, match="--env expects KEY=VALUE"):
        jobs.job_env(["AWS_REGION"], here)


class _FakeJobs:
    """What ``submit`` uses of a JobSubmissionClient."""

    def __init__(self) -> None:
        self.submitted: dict = {}

    def get_address(self) -> str:
        return "http://head:8265"

    def submit_job(self, **kwargs) -> str:
        self.submitted = kwargs
        return "raysubmit_1"


def test_submit_puts_the_credentials_in_the_runtime_env_and_names_them_once(
        monkeypatch, tmp_path, capsys):
    fake = _FakeJobs()
    monkeypatch.setattr(jobs, "client", lambda address=None: fake)
    for key in ("AWS_SESSION_TOKEN", "AWS_REGION", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    storage_uri = "s3://b/runs?endpoint_override=http://minio:9000&region=us-east-1"
    assert jobs.submit(["--", "raystudy", "sweep", "s", "--storage", storage_uri],
                       working_dir=str(tmp_path)) == "raysubmit_1"
    env_vars = fake.submitted["runtime_env"]["env_vars"]
    assert env_vars == {"AWS_ACCESS_KEY_ID": "AKIA1", "AWS_SECRET_ACCESS_KEY": SECRET,
                        "AWS_DEFAULT_REGION": "us-east-1"}
    assert fake.submitted["entrypoint"] == f"raystudy sweep s --storage '{storage_uri}'"
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    (line,) = [ln for ln in err.splitlines() if "AWS_" in ln]
    assert line == ("raystudy: passing AWS_ACCESS_KEY_ID, AWS_DEFAULT_REGION, "
                    "AWS_SECRET_ACCESS_KEY from this shell to the job (object storage "
                    "credentials; --env KEY=VALUE overrides)")
