"""Checks that run before any work starts, so a user's mistake is one line and exit 2.

Everything here answers "can this request ever succeed?" before Ray starts (or right
after it attaches to a cluster), instead of letting the mistake surface as a hang, a
traceback inside a trial or a half-written run folder:

* names and paths: a run name stays inside ``--storage``; a folder can be written
  (a probe file, so read-only mounts, permissions and quotas all show) and has room;
* resources: every bundle a trial asks for fits on some node and the trial fits the
  cluster (this machine for the embedded Ray; live nodes plus the node types an
  autoscaler can add, where they can be learnt; where not, nothing is refused and the
  runner watches the request while it waits); a trial's memory estimate fits a node;
* cluster addresses: the head answers on its port within ``--connect-timeout``;
* ``OSError`` from a write, turned into one line naming the path and the reason.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raystudy.contract.data import GIB
from raystudy.errors import UserError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]*$")

def check_run_name(name: str) -> None:
    """A run name is one folder inside ``--storage``: no separators, no ``..``."""
    if not _NAME.match(name) or ".." in name:
        raise UserError(f"--name {name!r} must be one folder name inside --storage "
                        "(letters, digits and ._=+-, not starting with a dot; no / or ..)")


# ----------------------------------------------------------------------------- resources
BOOTSTRAP_CONFIG = "~/ray_bootstrap_config.yaml"  # where `ray up` leaves its config on the head


@dataclass
class Capacity:
    """What a Ray cluster can ever provide: per-node totals and the node types an
    autoscaler may add (``node_types``: name -> (resources, max count)).

    ``types_known`` is False on a cluster whose autoscaler's node types could not be
    learnt (KubeRay without a ``--cluster-config``, a cloud cluster seen from outside):
    there a request no live node holds may still be met by a new node, so it is
    accepted and watched while it waits (``raystudy.platform.execution.placement``).
    """

    nodes: list[dict[str, float]]
    where: str
    node_types: dict[str, tuple[dict[str, float], int]] = field(default_factory=dict)
    types_known: bool = True
    types_source: str = ""

    def largest_nodes(self) -> list[dict[str, float]]:
        return self.nodes + [res for res, _ in self.node_types.values()]

    def total(self, key: str) -> float:
        total = sum(n.get(key, 0.0) for n in self.nodes)
        for res, max_count in self.node_types.values():
            if max_count < 0:
                return float("inf")
            total += res.get(key, 0.0) * max_count
        return total


def _fits(bundle: Mapping[str, float], node: Mapping[str, float]) -> bool:
    return all(amount <= node.get(key, 0.0) + 1e-9 for key, amount in bundle.items() if amount)


def show_resources(resources: Mapping[str, float]) -> str:
    def amount(key: str, value: float) -> str:
        return f"{value / GIB:.1f} GiB" if key == "memory" else f"{value:g}"

    shown = {k: v for k, v in resources.items()
             if v and not k.startswith(("node:", "accelerator_type:", "object_store"))}
    return ", ".join(f"{k} {amount(k, v)}" for k, v in shown.items()) or "nothing"


def check_placeable(bundles: Sequence[Mapping[str, float]], capacity: Capacity,
                    hint: str = "") -> list[str]:
    """One trial's bundles must each fit a node and together fit the cluster.

    Raises a one-line UserError where that can never happen. Where the node types are
    unknown, what no live node holds is not refused: it is returned as notes to print.
    """
    nodes = capacity.largest_nodes()
    problems: list[str] = []
    for bundle in bundles:
        if bundle and not any(_fits(bundle, node) for node in nodes):
            biggest = max(nodes, key=lambda n: (n.get("GPU", 0), n.get("CPU", 0)), default={})
            problems.append(f"a trial asks for {show_resources(bundle)} in one place, but no "
                            f"node of {capacity.where} has that (largest: "
                            f"{show_resources(biggest)})")
    wanted: dict[str, float] = {}
    for bundle in bundles:
        for key, amount in bundle.items():
            wanted[key] = wanted.get(key, 0.0) + amount
    for key, amount in wanted.items():
        have = capacity.total(key)
        if amount > have + 1e-9:
            problems.append(f"a trial asks for {show_resources({key: amount})} in all, but "
                            f"{capacity.where} has {show_resources({key: have})}")
    if problems and capacity.types_known:
        raise UserError(f"{problems[0]}{hint}")
    return problems


def _local_gpus() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:
        return 0


def _local_memory() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError):
        return float("inf")


def local_capacity(ray_view: bool = True) -> Capacity:
    """This machine, as an embedded Ray will see it (cgroup CPU limits included), or
    without ``ray_view`` as this process sees it (no Ray imported: ``--in-process``)."""
    try:
        if not ray_view:
            raise ImportError
        from ray._private.utils import get_num_cpus

        cpus = float(get_num_cpus())
    except Exception:
        cpus = float(len(os.sched_getaffinity(0)))
    node = {"CPU": cpus, "GPU": float(_local_gpus()), "memory": _local_memory()}
    return Capacity([node], "this machine (embedded Ray)")


NodeTypes = dict[str, tuple[dict[str, float], int]]


def read_launcher_config(path: str | os.PathLike, what: str) -> dict[str, Any]:
    """A cluster-launcher YAML (``ray up`` format, like ``clusters/aws.yaml``) with its
    ``available_node_types`` mapping; ``what`` names the flag in the one-line error."""
    import yaml

    path = Path(path).expanduser()
    try:
        config = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise UserError(f"{what} {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{what} {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    types = config.get("available_node_types") if isinstance(config, dict) else None
    if not isinstance(types, dict) or not types or not all(
            isinstance(t, dict) for t in types.values()):
        raise UserError(f"{what} {path}: no available_node_types (a mapping of node type "
                        "name to {resources, min_workers, max_workers}, as in clusters/aws.yaml)")
    return config


def launcher_node_types(path: str | os.PathLike, what: str = "--cluster-config"
                        ) -> NodeTypes | None:
    """Worker node types of a cluster-launcher YAML; None where a type leaves its
    resources to be detected from the instance type (then nothing is known)."""
    config = read_launcher_config(path, what)
    found: NodeTypes = {}
    for name, node_type in config["available_node_types"].items():
        if name == config.get("head_node_type"):
            continue  # the head is a live node already
        if not isinstance(node_type.get("resources"), dict):
            return None
        found[name] = ({k: float(v) for k, v in node_type["resources"].items()},
                       int(node_type.get("max_workers", config.get("max_workers", 0))))
    return found


def gcs_node_types() -> NodeTypes | None:
    """The node types in the GCS's autoscaler cluster config (what Ray Train and Ray Data
    read; written by ``raystudy cluster start --autoscale``), or None where unset."""
    try:
        from ray._private.state import state

        config = state.get_cluster_config()
    except Exception:
        return None
    groups = getattr(config, "node_group_configs", None) or []
    found = {group.name: ({k: float(v) for k, v in group.resources.items()},
                          int(group.max_count))
             for group in groups if group.max_count != 0}
    return found if groups else None


def fixed_cluster_node_types(live_ids: Sequence[str]) -> NodeTypes | None:
    """``{}`` where the autoscaler's own report in the GCS shows a cluster that cannot grow:
    with no autoscaling config, Ray's monitor runs a read-only provider whose node types
    are the live nodes themselves (``node_<node id>``). None where it shows anything else."""
    try:
        from ray.experimental.internal_kv import _internal_kv_get

        raw = _internal_kv_get("__autoscaling_status")
        report = json.loads(raw).get("autoscaler_report") or {} if raw else {}
    except Exception:
        return None
    active = set(report.get("active_nodes") or {})
    if active and active <= {f"node_{node_id}" for node_id in live_ids}:
        return {}
    return None


def cluster_capacity(address: str, cluster_config: str | None = None) -> Capacity:
    """Live nodes of the attached cluster plus the node types its autoscaler can add,
    learnt from (in this order) ``--cluster-config``, the GCS's autoscaler cluster config,
    the ``ray up`` bootstrap config on the head, and the autoscaler's report of a cluster
    that cannot grow (``ray start`` without autoscaling); where none says, types are
    unknown."""
    import ray

    live = [n for n in ray.nodes() if n.get("Alive")]
    nodes = [dict(n.get("Resources", {})) for n in live]
    capacity = Capacity(nodes, f"the Ray cluster at {address}")
    sources: list[tuple[str, Callable[[], NodeTypes | None]]] = []
    if cluster_config:
        sources.append((f"--cluster-config {cluster_config}",
                        lambda: launcher_node_types(cluster_config)))
    sources.append(("its autoscaler's cluster config", gcs_node_types))
    if Path(BOOTSTRAP_CONFIG).expanduser().is_file():
        sources.append((BOOTSTRAP_CONFIG,
                        lambda: launcher_node_types(BOOTSTRAP_CONFIG, BOOTSTRAP_CONFIG)))
    sources.append(("", lambda: fixed_cluster_node_types([n["NodeID"] for n in live])))
    for source, read in sources:
        types = read()
        if types is not None:
            capacity.node_types, capacity.types_source = types, source
            if source:
                capacity.where += f" or the node types it can add ({source})"
            return capacity
    capacity.types_known = False
    return capacity


def check_memory(estimate: int, capacity: Capacity, detail: str) -> None:
    """A trial whose estimated memory exceeds 90% of the largest node is refused."""
    largest = max((n.get("memory", float("inf")) for n in capacity.largest_nodes()),
                  default=float("inf"))
    if estimate > 0.9 * largest:
        raise UserError(f"a trial needs about {estimate / GIB:.1f} GiB of memory ({detail}), "
                        f"but {capacity.where} has at most {largest / GIB:.1f} GiB per node")


# ----------------------------------------------------------------------------- addresses
def _host_port(address: str) -> tuple[str, int] | None:
    if address == "auto" or address.startswith(("local", "anyscale://")):
        return None
    scheme, _, rest = address.rpartition("://")
    if scheme in ("http", "https"):
        raise UserError(f"--address {address} is a dashboard URL (for `raystudy submit` and "
                        "`raystudy jobs`); run/sweep attach with HOST:6379 or ray://HOST:10001")
    host, sep, port = rest.rpartition(":")
    if not sep:
        host, port = rest, "10001" if scheme == "ray" else "6379"
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        raise UserError(f"--address {address}: port {port!r} is not a number") from None


def probe_address(address: str, timeout_s: float) -> None:
    """The cluster's head must accept a TCP connection within ``timeout_s`` seconds."""
    target = _host_port(address)
    if target is None:
        return
    host, port = target
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise UserError(f"no Ray cluster answers at {address} within {timeout_s:g} s "
                        f"({reason}); is the head node up, and is that its address?") from None
