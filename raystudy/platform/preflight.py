"""Checks that run before any work starts, so a user's mistake is one line and exit 2.

Everything here answers "can this request ever succeed?" before Ray starts (or right
after it attaches to a cluster), instead of letting the mistake surface as a hang, a
traceback inside a trial or a half-written run folder:

* names and paths: a run name stays inside ``--storage``; a folder can be written
  (a probe file, so read-only mounts, permissions and quotas all show) and has room;
* resources: every bundle a trial asks for fits on some node and the trial fits the
  cluster (this machine for the embedded Ray; live nodes plus the autoscaler's node
  types where it reports them); a trial's memory estimate fits a node;
* cluster addresses: the head answers on its port within ``--connect-timeout``;
* ``OSError`` from a write, turned into one line naming the path and the reason.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from raystudy.errors import UserError

GIB = 1024**3
MIN_FREE_MB_ENV = "RAYSTUDY_MIN_FREE_MB"
DEFAULT_MIN_FREE_MB = 100
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]*$")

# errno values that describe the user's environment (a path, a mount, a disk), not a bug.
USER_ERRNOS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.ENOENT: "no such file or folder",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EISDIR: "is a folder",
    errno.ENAMETOOLONG: "name too long",
    errno.EFBIG: "file too large",
}


def is_user_os_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in USER_ERRNOS


def describe_os_error(exc: OSError, action: str = "write") -> str:
    """``cannot write PATH: read-only file system`` from an OSError (``action``: what
    failed, when it is known; ``access`` when it may have been a read)."""
    reason = USER_ERRNOS.get(exc.errno, exc.strerror or type(exc).__name__)
    return f"cannot {action} {exc.filename or '?'}: {reason}"


def check_run_name(name: str) -> None:
    """A run name is one folder inside ``--storage``: no separators, no ``..``."""
    if not _NAME.match(name) or ".." in name:
        raise UserError(f"--name {name!r} must be one folder name inside --storage "
                        "(letters, digits and ._=+-, not starting with a dot; no / or ..)")


def _existing_ancestor(folder: Path) -> Path:
    folder = folder.absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def min_free_bytes() -> int:
    text = os.environ.get(MIN_FREE_MB_ENV, str(DEFAULT_MIN_FREE_MB))
    try:
        return max(0, int(float(text) * 1024**2))
    except ValueError:
        raise UserError(f"{MIN_FREE_MB_ENV}={text!r} is not a number of megabytes") from None


def check_writable(folder: str | os.PathLike, what: str, need_bytes: int = 0,
                   hint: str = "") -> None:
    """Probe-write into ``folder`` (or its nearest existing parent) without creating it.

    Raises a one-line UserError for a read-only mount, a permission or quota problem,
    a path through a file, or less free space than ``need_bytes`` (default: the
    ``RAYSTUDY_MIN_FREE_MB`` floor, 100 MB).
    """
    folder = Path(folder).expanduser()
    base = _existing_ancestor(folder)
    if not base.is_dir():
        raise UserError(f"{what} {folder}: {base} is a file, not a folder")
    try:
        with tempfile.NamedTemporaryFile(dir=base, prefix=".raystudy-probe-") as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        if not is_user_os_error(exc):
            raise
        raise UserError(f"{what} {folder}: {USER_ERRNOS[exc.errno]}{hint}") from None
    need = need_bytes or min_free_bytes()
    free = shutil.disk_usage(base).free
    if free < need:
        raise UserError(f"{what} {folder}: only {free / 1024**2:.0f} MB free, need at least "
                        f"{need / 1024**2:.0f} MB (free space, or set {MIN_FREE_MB_ENV}){hint}")


# ----------------------------------------------------------------------------- resources
@dataclass
class Capacity:
    """What a Ray cluster can ever provide: per-node totals and, where an autoscaler
    reports them, the node types it may add (``node_types``: name -> (resources, max))."""

    nodes: list[dict[str, float]]
    where: str
    node_types: dict[str, tuple[dict[str, float], int]] = field(default_factory=dict)

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


def _show(resources: Mapping[str, float]) -> str:
    def amount(key: str, value: float) -> str:
        return f"{value / GIB:.1f} GiB" if key == "memory" else f"{value:g}"

    shown = {k: v for k, v in resources.items()
             if v and not k.startswith(("node:", "accelerator_type:", "object_store"))}
    return ", ".join(f"{k} {amount(k, v)}" for k, v in shown.items()) or "nothing"


def check_placeable(bundles: Sequence[Mapping[str, float]], capacity: Capacity,
                    hint: str = "") -> None:
    """One trial's bundles must each fit a node and together fit the cluster."""
    nodes = capacity.largest_nodes()
    for bundle in bundles:
        if bundle and not any(_fits(bundle, node) for node in nodes):
            biggest = max(nodes, key=lambda n: (n.get("GPU", 0), n.get("CPU", 0)), default={})
            raise UserError(f"a trial asks for {_show(bundle)} in one place, but no node of "
                            f"{capacity.where} has that (largest: {_show(biggest)}){hint}")
    wanted: dict[str, float] = {}
    for bundle in bundles:
        for key, amount in bundle.items():
            wanted[key] = wanted.get(key, 0.0) + amount
    for key, amount in wanted.items():
        have = capacity.total(key)
        if amount > have + 1e-9:
            raise UserError(f"a trial asks for {_show({key: amount})} in all, but "
                            f"{capacity.where} has {_show({key: have})}{hint}")


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


def local_capacity() -> Capacity:
    """This machine, as an embedded Ray will see it (cgroup CPU limits included)."""
    try:
        from ray._private.utils import get_num_cpus

        cpus = float(get_num_cpus())
    except Exception:
        cpus = float(len(os.sched_getaffinity(0)))
    node = {"CPU": cpus, "GPU": float(_local_gpus()), "memory": _local_memory()}
    return Capacity([node], "this machine (embedded Ray)")


def cluster_capacity(address: str) -> Capacity:
    """Live nodes of the attached cluster, plus the autoscaler's node types if reported."""
    import ray

    nodes = [dict(n.get("Resources", {})) for n in ray.nodes() if n.get("Alive")]
    capacity = Capacity(nodes, f"the Ray cluster at {address}")
    try:
        from ray._private.state import state

        config = state.get_cluster_config()
    except Exception:
        config = None
    for group in getattr(config, "node_group_configs", []) or []:
        capacity.node_types[group.name] = (
            {k: float(v) for k, v in group.resources.items()}, int(group.max_count))
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
