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
