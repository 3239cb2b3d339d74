"""Shared fixtures: one embedded Ray per test session, and a tiny-config helper."""

from __future__ import annotations

import os

import pytest

# Keep test output readable and Tune's logs small.
os.environ.setdefault("RAY_DEDUP_LOGS", "1")
os.environ.setdefault("TUNE_MAX_PENDING_TRIALS_PG", "2")


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for every test that needs it (2 CPUs, no dashboard, small object store)."""
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
