"""Shared fixtures: one embedded Ray per test session, small tmpfs mounts, a real
S3-compatible server (moto) on loopback, and a throwaway PostgreSQL server."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

# The helpers in tests/platform (cluster_helpers, s3_helpers) import by bare name, as
# pytest's default import mode puts a test file's folder on sys.path; a fixture here
# may be the first to need them.
_HELPERS = str(Path(__file__).parent / "platform")
if _HELPERS not in sys.path:
    sys.path.append(_HELPERS)

# Keep test output readable and Tune's logs small.
os.environ.setdefault("RAY_DEDUP_LOGS", "1")
os.environ.setdefault("TUNE_MAX_PENDING_TRIALS_PG", "2")
# `raystudy run` attaches to a cluster `raystudy cluster start` runs on this machine; tests
# look for one only where they start it themselves, never at a developer's own.
os.environ["RAYSTUDY_CLUSTER_DIR"] = tempfile.mkdtemp(prefix="rs-no-cluster-")


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for every test that needs it (2 CPUs, no dashboard, small object store)."""
    if os.environ.get("RAYSTUDY_NO_RAY"):  # `make test-fast` promises a loop without Ray
        pytest.fail("this test starts Ray: it belongs in `make test`, not `make test-fast`")
    import ray

    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False,
                 object_store_memory=200 * 1024**2, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def mount_tmpfs(tmp_path):
    """``mount_tmpfs(size="2m", read_only=False)`` mounts a small tmpfs under tmp_path
    (read-only mounts and full disks are real, even for root); skipped where mounting is
    not allowed. Unmounted at the end of the test."""
    import subprocess

    mounted = []

    def mount(size: str = "2m", read_only: bool = False):
        point = tmp_path / f"fs{len(mounted)}"
        point.mkdir()
        options = f"size={size}" + (",ro" if read_only else "")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
                              capture_output=True)
        if done.returncode != 0:
            pytest.skip("cannot mount a tmpfs here (needs root)")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


@pytest.fixture
def s3_server(monkeypatch):
    """A real S3-compatible server (moto) on 127.0.0.1 with one bucket, fake ``AWS_*``
    credentials set for the test; yields ``S3Server`` (``.endpoint``, ``.uri(bucket,
    prefix)``, ``.keys(prefix)``). See tests/platform/s3_helpers.py."""
    from s3_helpers import CREDENTIALS, s3_server

    for key in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_REGION"):
        monkeypatch.delenv(key, raising=False)
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    with s3_server() as server:
        yield server


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL server on 127.0.0.1 for this test session (trust auth),
    stopped and removed at the end; yields ``PostgresServer`` (``.url(db)``,
    ``.create_database(name)``). Skipped, with the reason, where no server can be started.
    See tests/platform/pg_helpers.py."""
    from pg_helpers import postgres_server, why_not

    reason = why_not()
    if reason:
        pytest.skip(reason)
    with postgres_server() as server:
        yield server
