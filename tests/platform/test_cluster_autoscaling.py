"""The cluster path on real multi-node Ray on this machine: a head with 0 CPUs and Ray's
fake autoscaler (shaped like ``clusters/aws.yaml``), and a static cluster whose node
types nobody can know. Each cluster has its own ports and temp dir and is stopped by
ending exactly the processes it started.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import BIN, REPO, LocalCluster, alive_nodes, local_cluster
from ft_helpers import HERE, _node_steps

pytestmark = pytest.mark.cluster

# The shipped local rehearsal config, with idle nodes removed after 6 s instead of 60 s.
IDLE_TIMEOUT_MINUTES = 0.1


def _ft(cluster: LocalCluster, tmp: Path, *args: str, timeout: float = 240,
        attach: bool = True) -> subprocess.CompletedProcess[str]:
    """The real CLI with the test-only fault_test study, attached to ``cluster`` (with
    ``attach=False`` it is given no address and must find the cluster itself)."""
    profile = tmp / "quick.yaml"
    profile.write_text("config: {}\n")
    env = dict(cluster.env, PYTHONPATH=f"{HERE}:{cluster.env['PYTHONPATH']}")
    cmd = [str(BIN / "python"), str(HERE / "ft_cli.py"), *args, "--profile", str(profile),
           "--storage", str(tmp / "runs"), "--set", f"log_dir={tmp}",
           *(["--address", cluster.gcs_address] if attach else [])]
    return subprocess.run(cmd, env=env, text=True, capture_output=True, timeout=timeout)


@pytest.fixture(scope="module")
def autoscaling(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    import yaml

    config = yaml.safe_load((REPO / "clusters" / "local-autoscale.yaml").read_text())
    config["idle_timeout_minutes"] = IDLE_TIMEOUT_MINUTES
    path = tmp_path_factory.mktemp("autoscale") / "autoscale.yaml"
    path.write_text(yaml.safe_dump(config))
    with local_cluster(0, "--autoscale", str(path)) as cluster:
        yield cluster


def test_sweep_autoscales_from_zero_and_idle_nodes_go(autoscaling: LocalCluster,
                                                      tmp_path: Path) -> None:
    head = alive_nodes(autoscaling)
    assert len(head) == 1 and head[0]["cpus"] == 0, "the head only schedules"
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  tag: {grid: [0, 1, 2]}\n")
    done = _ft(autoscaling, tmp_path, "sweep", "fault_test", "--space", str(space),
               "--set", "steps=3", "--set", "sleep_s=0.5")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    steps = _node_steps(tmp_path)
    assert sorted((tag, step) for tag, step, _, _ in steps) == [
        (tag, step) for tag in range(3) for step in range(1, 4)]
    ran_on = {node for _, _, _, node in steps}
    assert head[0]["id"] not in ran_on, "no trial ran on the 0-CPU head"
    summary = json.loads(next((tmp_path / "runs").glob("*/summary.json")).read_text())
    assert summary["counts"]["finished"] == 3
    results = [json.loads(line) for path in (tmp_path / "runs").glob("*/*/result.json")
               for line in path.read_text().splitlines() if line.strip()]
    assert {r["node_id"] for r in results} == ran_on, "each result records its node"
    deadline = time.monotonic() + 90
    while len(alive_nodes(autoscaling)) > 1 and time.monotonic() < deadline:
        time.sleep(2)
    assert len(alive_nodes(autoscaling)) == 1, "idle worker nodes are removed"


@pytest.mark.parametrize("ask, says", [
    (("--workers", "1", "--cpus-per-worker", "4"), "CPU 4 in one place"),
    (("--gpus-per-worker", "1", "--workers", "1"), "GPU 1 in one place"),
])
def test_never_placeable_is_refused_at_once(autoscaling: LocalCluster, tmp_path: Path,
                                            ask: tuple[str, ...], says: str) -> None:
    started = time.monotonic()
    done = _ft(autoscaling, tmp_path, "run", "fault_test", *ask)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("raystudy: error: ") and says in lines[-1]
    assert "node types it can add (its autoscaler's cluster config)" in lines[-1]
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 60
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_static_cluster_cannot_grow_so_never_placeable_is_refused(tmp_path: Path) -> None:
    """Without autoscaling, Ray's monitor reports the live nodes as the only node types."""
    with local_cluster(1, "--workers", "1") as cluster:
        assert len(alive_nodes(cluster)) == 2
        done = _ft(cluster, tmp_path, "run", "fault_test", "--workers", "1",
                   "--cpus-per-worker", "4")
        (tmp_path / "found").mkdir()
        found = _ft(cluster, tmp_path / "found", "run", "fault_test", "--set", "steps=2",
                    attach=False)
    assert found.returncode == 0, found.stdout[-2000:] + found.stderr[-2000:]
    assert f"attaching to the local cluster at {cluster.gcs_address}" in found.stdout
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "CPU 4 in one place, but no node of the Ray cluster" in last, last
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


_FORGET_NODE_TYPES = """
import sys, ray, ray._raylet as raylet
from ray.experimental.internal_kv import _internal_kv_del
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
_internal_kv_del(raylet.GCS_AUTOSCALER_CLUSTER_CONFIG_KEY,
                 namespace=raylet.GCS_AUTOSCALER_STATE_NAMESPACE)
"""


def test_unknown_node_types_wait_a_bounded_time(autoscaling: LocalCluster,
                                                tmp_path: Path) -> None:
    """An autoscaler whose node types nobody published (as under KubeRay): the run is
    accepted with a note; the trial gets its node, its Train worker of 4 CPUs none, and
    the run ends after --placement-timeout with one line."""
    from raystudy.platform.cluster.localcluster import load_node_types, publish_cluster_config

    forget = subprocess.run([str(BIN / "python"), "-c", _FORGET_NODE_TYPES,
                             autoscaling.gcs_address], env=autoscaling.env, capture_output=True,
                            text=True, timeout=60)
    assert forget.returncode == 0, forget.stderr[-2000:]
    try:
        started = time.monotonic()
        done = _ft(autoscaling, tmp_path, "run", "fault_test", "--workers", "1",
                   "--cpus-per-worker", "4", "--placement-timeout", "5")
        took = time.monotonic() - started
    finally:
        config = load_node_types(autoscaling.state_dir / "autoscaler.yaml")
        publish_cluster_config(autoscaling.gcs_address, config, autoscaling.env)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "the node types the Ray cluster" in done.stderr and "are unknown" in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("raystudy: error: a trial asks for"), last
    assert "CPU 4 in one place" in last and "added none in 5 s" in last
    assert took < 120
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
