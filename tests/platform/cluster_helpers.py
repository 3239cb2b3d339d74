"""Helpers for tests that start their own Ray: free ports, token-protected local
clusters through ``clusters/local-cluster.sh`` (``raystudy cluster``): one node, a head
with static worker nodes, or a head with Ray's fake autoscaler; running the CLI.

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
from typing import Any

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
    gcs_address: str = ""  # HOST:PORT for --address of run/sweep
    state_dir: Path = Path()


@contextlib.contextmanager
def local_cluster(num_cpus: int = 2, *start_args: str) -> Iterator[LocalCluster]:
    """A token-protected cluster with the dashboard, stopped on exit: the head holds
    ``num_cpus``; ``start_args`` (``--workers N``, ``--autoscale FILE``) add nodes."""
    state = Path(tempfile.mkdtemp(prefix="rs-", dir="/tmp"))  # short: Ray's socket paths
    dashboard_port, ray_port = free_port(), free_port()
    env = base_env(
        RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16),
        RAYSTUDY_CLUSTER_DIR=str(state), NUM_CPUS=str(num_cpus),
        RAY_PORT=str(ray_port), DASHBOARD_PORT=str(dashboard_port),
        CLIENT_PORT=str(free_port()), AGENT_PORT=str(free_port()),
        OBJECT_STORE_BYTES=str(200 * 1024**2), RAY_USAGE_STATS_ENABLED="0",
    )
    started = subprocess.run(["bash", str(SCRIPT), "start", *start_args], env=env, text=True,
                             capture_output=True, timeout=200)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield LocalCluster(address=f"http://127.0.0.1:{dashboard_port}", env=env,
                           gcs_address=f"127.0.0.1:{ray_port}", state_dir=state)
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True,
                       timeout=120)
        shutil.rmtree(state, ignore_errors=True)


def alive_nodes(cluster: LocalCluster) -> list[dict]:
    """``ray.nodes()`` of the cluster's live nodes, read in a child process."""
    import json

    probe = ("import json, sys, ray; ray.init(address=sys.argv[1], logging_level='ERROR', "
             "log_to_driver=False); "
             "print(json.dumps([{'id': n['NodeID'], 'cpus': n['Resources'].get('CPU', 0)} "
             "for n in ray.nodes() if n['Alive']]))")
    done = subprocess.run([sys.executable, "-c", probe, cluster.gcs_address], env=cluster.env,
                          text=True, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def get_json(url: str, deadline: float) -> Any:
    """The JSON served at ``url``, polled until it answers or ``deadline`` (monotonic)."""
    import json
    import time
    import urllib.request

    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return json.loads(response.read())
        except OSError:
            assert time.monotonic() < deadline, f"nothing served at {url}"
            time.sleep(0.2)
