"""Helpers for tests that start their own Ray: free ports, a token-protected local
cluster through ``clusters/local-cluster.sh``, and running the ``raystudy`` CLI.

Every cluster gets its own temp dir and ports and is stopped by killing the process tree
the script started, never by ``ray stop`` (which would end every Ray on the machine).
The auth variables are set explicitly, so whatever ``~/.ray/auth_token`` an earlier
test or ``ray.init`` left behind does not matter.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "clusters" / "local-cluster.sh"
BIN = Path(sys.executable).parent
AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS",
             "RAY_API_SERVER_ADDRESS")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def base_env(**extra: str) -> dict[str, str]:
    """This environment without any Ray auth/address variables, venv first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in AUTH_VARS}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def raystudy(*args: str, env: dict[str, str], timeout: float = 300,
             cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "raystudy"), *args], env=env, cwd=cwd, text=True,
                          capture_output=True, timeout=timeout)


@dataclass
class LocalCluster:
    address: str  # dashboard / Jobs API URL
    env: dict[str, str]  # a client environment holding the cluster's token


@contextlib.contextmanager
def local_cluster(num_cpus: int = 2) -> Iterator[LocalCluster]:
    """A token-protected single-node cluster with the dashboard, stopped on exit."""
    state = Path(tempfile.mkdtemp(prefix="rs-", dir="/tmp"))  # short: Ray's socket paths
    dashboard_port = free_port()
    env = base_env(
        RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16),
        RAYSTUDY_CLUSTER_DIR=str(state), NUM_CPUS=str(num_cpus),
        RAY_PORT=str(free_port()), DASHBOARD_PORT=str(dashboard_port),
        CLIENT_PORT=str(free_port()), AGENT_PORT=str(free_port()),
        OBJECT_STORE_BYTES=str(200 * 1024**2), RAY_USAGE_STATS_ENABLED="0",
    )
    started = subprocess.run(["bash", str(SCRIPT), "start"], env=env, text=True,
                             capture_output=True, timeout=200)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield LocalCluster(address=f"http://127.0.0.1:{dashboard_port}", env=env)
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True,
                       timeout=120)
        shutil.rmtree(state, ignore_errors=True)
