"""A multi-node Ray cluster on one machine, to rehearse a cluster run before paying for VMs.

``raystudy cluster start`` starts a head (``ray start --head --block``) and either
``--workers N`` static worker nodes (each its own ``ray start --address``) or, with
``--autoscale FILE``, Ray's fake multi-node autoscaler, which adds and removes real
raylets on this machine for the node types in FILE exactly as a cloud autoscaler would.
The head holds 0 CPUs in that case by default, so the cluster is shaped like
``clusters/aws.yaml``: the head only schedules, every trial waits for a worker node.

Every process is started in a session of its own and its pid saved in
``DIR/cluster.json``; ``stop`` ends exactly those process trees (never ``ray stop``,
which would end every Ray on the machine). Token authentication stays on, as for a
single-node cluster. With ``--autoscale`` the node types are also written where Ray's
own components look for them (the GCS's autoscaler cluster config, which Ray Train and
Ray Data read too), so a driver attached to this cluster knows what it can grow to.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from raystudy.errors import ConfigError, UserError
from raystudy.platform.execution.preflight import read_launcher_config

DEFAULT_DIR = "/tmp/raystudy-cluster"
STATE_FILE = "cluster.json"
START_TIMEOUT_S = 120.0
FAKE_HEAD_TYPE = "ray.head.default"  # the type Ray's fake provider gives its head node

# Keys Ray's v1 monitor reads from a cluster config even when the provider needs none.
_LEGACY_EMPTY = {
    "auth": {}, "docker": {}, "file_mounts": {}, "cluster_synced_files": [],
    "file_mounts_sync_continuously": False, "rsync_exclude": [], "rsync_filter": [],
    "initialization_commands": [], "setup_commands": [], "head_setup_commands": [],
    "worker_setup_commands": [], "head_start_ray_commands": [],
    "worker_start_ray_commands": [],
}


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise UserError(f"{name}={text!r} is not a number") from None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def state_dir() -> Path:
    """Where ``raystudy cluster`` keeps its state: RAYSTUDY_CLUSTER_DIR, else the default."""
    return Path(os.environ.get("RAYSTUDY_CLUSTER_DIR", DEFAULT_DIR))


@dataclass
class ClusterSpec:
    """What to start. Ports default to the environment (RAY_PORT, DASHBOARD_PORT,
    CLIENT_PORT, AGENT_PORT) and then to Ray's usual numbers."""

    dir: Path = field(default_factory=state_dir)
    workers: int = 0
    cpus_per_worker: float = 1.0
    autoscale: Path | None = None
    head_cpus: float | None = field(default_factory=lambda: _env_int("NUM_CPUS", -1)
                                    if os.environ.get("NUM_CPUS") else None)
    """CPUs of the head; None: all cores, or 0 with --autoscale."""
    ray_port: int = field(default_factory=lambda: _env_int("RAY_PORT", 6379))
    dashboard_port: int = field(default_factory=lambda: _env_int("DASHBOARD_PORT", 8265))
    client_port: int = field(default_factory=lambda: _env_int("CLIENT_PORT", 10001))
    agent_port: int = field(default_factory=lambda: _env_int("AGENT_PORT", 52365))
    object_store_bytes: int | None = field(default_factory=lambda: _env_int(
        "OBJECT_STORE_BYTES", 0) or None)


# ----------------------------------------------------------------------------- config
def load_node_types(path: Path) -> dict[str, Any]:
    """A cluster-launcher YAML (``clusters/aws.yaml`` or a small one of its shape), read
    and checked: node types with resources, and a ``head_node_type`` among them."""
    config = read_launcher_config(path, "--autoscale")
    types = config["available_node_types"]
    head = config.get("head_node_type")
    if head not in types:
        raise ConfigError(f"--autoscale {path}: head_node_type {head!r} is not one of "
                          f"{', '.join(types)}")
    for name, node_type in types.items():
        if not isinstance(node_type.get("resources", {}), dict):
            raise ConfigError(f"--autoscale {path}: node type {name!r} needs a resources "
                              "mapping such as {CPU: 1}")
    return config


def fake_autoscaler_config(config: dict[str, Any], gcs_address: str,
                           head_cpus: float | None) -> dict[str, Any]:
    """The launcher YAML turned into one Ray's fake multi-node provider runs: the cloud
    provider and node configs replaced, the head's CPUs set (0 unless asked), the head
    type renamed to the one the fake provider tags its head with (else the autoscaler
    keeps adding and removing "head" nodes)."""
    head = config["head_node_type"]
    types: dict[str, Any] = {}
    for name, node_type in config["available_node_types"].items():
        name = FAKE_HEAD_TYPE if name == head else name
        resources = {k: float(v) for k, v in (node_type.get("resources") or {}).items()}
        entry = {"resources": resources, "node_config": {},
                 "min_workers": int(node_type.get("min_workers", 0)),
                 "max_workers": int(node_type.get("max_workers", 0))}
        if name == FAKE_HEAD_TYPE:
            entry.update(min_workers=0, max_workers=0)
            entry["resources"]["CPU"] = float(head_cpus or 0)
        types[name] = entry
    return {
        **_LEGACY_EMPTY,
        "cluster_name": str(config.get("cluster_name", "raystudy-local")),
        "max_workers": int(config.get("max_workers",
                                      sum(t["max_workers"] for t in types.values()))),
        "upscaling_speed": float(config.get("upscaling_speed", 1.0)),
        "idle_timeout_minutes": float(config.get("idle_timeout_minutes", 1)),
        "provider": {"type": "fake_multinode", "use_node_id_as_ip": True,
                     "disable_node_updaters": True, "disable_launch_config_check": True,
                     "gcs_address": gcs_address},
        "available_node_types": types,
        "head_node_type": FAKE_HEAD_TYPE,
    }


def cluster_config_proto(config: dict[str, Any]) -> bytes:
    """The node types as Ray's ``autoscaler_pb2.ClusterConfig`` (what the GCS holds under
    its autoscaler cluster-config key and ``ray._private.state`` returns)."""
    from ray.core.generated import autoscaler_pb2

    proto = autoscaler_pb2.ClusterConfig()
    for name, node_type in config["available_node_types"].items():
        group = proto.node_group_configs.add()
        group.name = name
        group.min_count = int(node_type.get("min_workers", 0))
        group.max_count = int(node_type.get("max_workers", 0))
        for key, value in (node_type.get("resources") or {}).items():
            group.resources[key] = int(value)
    return proto.SerializeToString()


_PUBLISH = """
import sys, ray._raylet as raylet
client = raylet.GcsClient(address=sys.argv[1])
client.internal_kv_put(raylet.GCS_AUTOSCALER_CLUSTER_CONFIG_KEY.encode(),
                       sys.stdin.buffer.read(), True,
                       raylet.GCS_AUTOSCALER_STATE_NAMESPACE.encode())
"""


def publish_cluster_config(gcs_address: str, config: dict[str, Any],
                           env: dict[str, str]) -> None:
    """Write the node types into the GCS where ``get_cluster_config()`` reads them (in a
    child process: the token settings of ``env`` apply to it, not to this one)."""
    done = subprocess.run([sys.executable, "-c", _PUBLISH, gcs_address], env=env,
                          input=cluster_config_proto(config), capture_output=True,
                          timeout=60)
    if done.returncode:
        raise UserError("cannot write the node types into the GCS at "
                        f"{gcs_address}: {done.stderr.decode(errors='replace')[-300:]}")


# ----------------------------------------------------------------------------- processes
def _ray_bin() -> str:
    return str(Path(sys.executable).parent / "ray")


def _spawn(args: list[str], log: Path, env: dict[str, str]) -> int:
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    return proc.pid


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it, plus whatever else runs in its session
    (a raylet whose parent died is re-parented but keeps the session)."""
    import psutil

    found: set[int] = set()
    try:
        root = psutil.Process(pid)
        found.update(p.pid for p in root.children(recursive=True))
        found.add(pid)
    except psutil.NoSuchProcess:
        pass
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == pid:
                found.add(proc.pid)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return sorted(found)


def _kill(pids: list[int], grace_s: float = 10.0, signal_only: set[int] | None = None
          ) -> None:
    """SIGTERM ``pids`` (or only those in ``signal_only``), wait up to ``grace_s`` for all
    of ``pids`` to end, SIGKILL what is left."""
    import psutil

    procs = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            if signal_only is None or pid in signal_only:
                proc.send_signal(signal.SIGTERM)
            procs.append(proc)
        except psutil.Error:
            continue
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _healthy(dashboard: str) -> bool:
    try:
        with urllib.request.urlopen(f"{dashboard}/api/gcs_healthz", timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def _client_env(env: dict[str, str]) -> dict[str, str]:
    """Token authentication on; a token is generated once if the machine has none."""
    env = dict(env, RAY_AUTH_MODE="token", RAY_USAGE_STATS_ENABLED="0")
    if not (env.get("RAY_AUTH_TOKEN") or env.get("RAY_AUTH_TOKEN_PATH")
            or (Path.home() / ".ray" / "auth_token").is_file()):
        subprocess.run([_ray_bin(), "get-auth-token", "--generate"], env=env, check=True,
                       capture_output=True)
    return env


def read_state(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((Path(folder) / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None


def running(folder: Path) -> dict[str, Any] | None:
    """The saved state of a cluster started from ``folder`` whose head still runs."""
    state = read_state(folder)
    if state and _alive(state["head_pid"]) and _healthy(state["dashboard"]):
        return state
    return None


_READY = """
import sys, ray
from ray.experimental.internal_kv import _internal_kv_get
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
reported = bool(_internal_kv_get("__autoscaling_status"))
print("ALIVE", sum(n["Alive"] for n in ray.nodes()) if reported else 0)
"""


def _wait_for_nodes(gcs_address: str, env: dict[str, str], count: int, head_pid: int,
                    log: Path) -> None:
    """Block until ``count`` nodes are alive (the head plus the static workers) and Ray's
    monitor has written its first report (what a driver reads to learn the node types)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        done = subprocess.run([sys.executable, "-c", _READY, gcs_address], env=env, text=True,
                              capture_output=True, timeout=60)
        alive = [int(line.split()[1]) for line in done.stdout.splitlines()
                 if line.startswith("ALIVE ")]
        if done.returncode == 0 and alive and alive[-1] >= count:
            return
        if not _alive(head_pid):
            break
        time.sleep(1)
    raise UserError(f"the local cluster did not reach {count} node(s) within "
                    f"{START_TIMEOUT_S:.0f} s (see {log})")


def _wait_node_started(log: Path, pid: int) -> None:
    """Block until the ``ray start`` writing ``log`` says its node is up. Nodes started at
    the same moment on one host sharing a session folder pick the same socket name
    (``plasma_store``, ``plasma_store.1``, ...) and one raylet dies with 'bind: Address
    already in use'; nodes have temp dirs of their own now, and one at a time a 2-core
    machine's GCS also keeps up (four at once timed out registering)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while "Ray runtime started" not in log.read_text(errors="replace"):
        if not _alive(pid) or time.monotonic() > deadline:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-5:])
            raise UserError(f"ray start of a worker node failed (see {log}): {tail}")
        time.sleep(0.2)


def start(spec: ClusterSpec) -> dict[str, Any]:
    """Start the cluster described by ``spec``; returns its saved state."""
    folder = Path(spec.dir)
    if (state := running(folder)) is not None:
        print(f"raystudy: a local cluster already runs from {folder} at {state['address']}")
        return state
    if spec.workers and spec.autoscale:
        raise UserError("--workers and --autoscale are exclusive: static nodes or an "
                        "autoscaler, not both")
    launcher_config = load_node_types(spec.autoscale) if spec.autoscale else None
    folder.mkdir(parents=True, exist_ok=True)
    env = _client_env(dict(os.environ))
    gcs_address = f"127.0.0.1:{spec.ray_port}"
    dashboard = f"http://127.0.0.1:{spec.dashboard_port}"
    head_cpus = spec.head_cpus
    head_args = [_ray_bin(), "start", "--head", "--block", "--disable-usage-stats",
                 "--port", str(spec.ray_port), "--temp-dir", str(folder / "ray"),
                 "--dashboard-host", "127.0.0.1", "--dashboard-port", str(spec.dashboard_port),
                 "--ray-client-server-port", str(spec.client_port),
                 "--dashboard-agent-listen-port", str(spec.agent_port)]
    head_env = dict(env)
    fake_config = None
    if launcher_config is not None:
        fake_config = fake_autoscaler_config(launcher_config, gcs_address, head_cpus)
        config_path = folder / "autoscaler.yaml"
        import yaml

        config_path.write_text(yaml.safe_dump(fake_config))
        head_cpus = head_cpus or 0
        head_args += ["--autoscaling-config", str(config_path)]
        head_env.update(RAY_FAKE_CLUSTER="1", AUTOSCALER_UPDATE_INTERVAL_S="1")
    head_args += ["--num-cpus", str(int(head_cpus if head_cpus is not None
                                        else os.cpu_count() or 1))]
    if spec.object_store_bytes:
        head_args += ["--object-store-memory", str(spec.object_store_bytes)]
    log = folder / "head.log"
    head_pid = _spawn(head_args, log, head_env)
    state = {"dir": str(folder), "address": gcs_address, "dashboard": dashboard,
             "head_pid": head_pid, "worker_pids": [], "autoscale": fake_config is not None,
             "spec": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(spec).items()}}
    _save(folder, state)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(dashboard):
            if not _alive(head_pid) or time.monotonic() > deadline:
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-5:])
                raise UserError(f"ray start --head failed (see {log}): {tail}")
            time.sleep(0.5)
        for index in range(spec.workers):  # one at a time: a small machine's GCS keeps up
            worker_log = folder / f"worker-{index}.log"
            state["worker_pids"].append(_spawn(  # a temp dir of its own, as on a machine
                [_ray_bin(), "start", "--block", "--address", gcs_address,
                 "--num-cpus", f"{spec.cpus_per_worker:g}",
                 "--temp-dir", str(folder / f"node-{index}"),
                 "--dashboard-agent-listen-port", str(free_port())], worker_log, env))
            _save(folder, state)
            _wait_node_started(worker_log, state["worker_pids"][-1])
        if fake_config is not None:
            publish_cluster_config(gcs_address, fake_config, env)
        _wait_for_nodes(gcs_address, env, 1 + spec.workers, head_pid, log)
    except BaseException:
        stop(folder)
        raise
    return state


def _save(folder: Path, state: dict[str, Any]) -> None:
    tmp = folder / f".{STATE_FILE}.tmp"
    tmp.write_text(json.dumps(state, indent=2))
    os.replace(tmp, folder / STATE_FILE)


def stop(folder: Path) -> bool:
    """End exactly the processes started from ``folder``; False if none was recorded."""
    state = read_state(folder)
    if state is None:
        return False
    pids: list[int] = []
    for pid in [*state.get("worker_pids", []), state["head_pid"]]:
        pids += _tree(pid)
    # The GCS last, and through the head's `ray start`: a raylet told to stop unregisters its
    # node with the GCS and, with the GCS gone, waits that call out (10 s); the GCS and the
    # head's `ray start` signalled together each outlive SIGTERM (10 s more), while the head
    # alone ends its GCS and itself in about 2 s.
    head = state["head_pid"]
    last = {head, *_gcs_servers(pids)}
    _kill(sorted(set(pids) - last))
    _kill(sorted(last | set(_tree(head))), signal_only={head})
    (Path(folder) / STATE_FILE).unlink(missing_ok=True)
    return True


def _gcs_servers(pids: list[int]) -> list[int]:
    import psutil

    found = []
    for pid in pids:
        try:
            if Path(psutil.Process(pid).exe()).name == "gcs_server":
                found.append(pid)
        except (psutil.Error, OSError):
            continue
    return found


def describe(state: dict[str, Any]) -> str:
    kind = ("fake autoscaler" if state.get("autoscale")
            else f"{len(state.get('worker_pids', []))} static worker node(s)")
    return (f"head at {state['address']} with {kind}; dashboard and Jobs API at "
            f"{state['dashboard']}; logs in {state['dir']}")
