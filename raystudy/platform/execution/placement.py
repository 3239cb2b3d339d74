"""Watch trials that wait for nodes on an attached cluster: progress while an autoscaler
adds nodes, one line and exit 2 when a request stays unplaceable.

The preflight refuses what no node type can ever hold, but only where the node types
are known. Elsewhere (KubeRay seen without its RayCluster spec, a cluster whose config
could not be read) a trial may ask for what no node will ever have; Ray then queues it
silently forever (a trial's Train workers too: the trial itself runs, its worker group
retries every minute). While trials are pending or running, this Tune callback looks at
each bundle a trial holds (itself, its map slots, its Train workers):

* every bundle fits some live node (free or busy): nothing to watch;
* the autoscaler is adding nodes (its report in the GCS: launches and nodes starting):
  merely pending; a progress line names the nodes being added;
* else, for ``timeout_s`` on end: the request is infeasible here, and the run stops
  with :class:`PlacementTimeout` (a one-line error, exit 2).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ray.tune import Callback

from raystudy.errors import UserError
from raystudy.platform.execution.preflight import show_resources

AUTOSCALING_STATUS_KEY = "__autoscaling_status"  # where the v1 monitor writes its report


class PlacementTimeout(UserError):
    """No trial could be placed for the bounded time and no node was being added."""


def autoscaler_launches() -> dict[str, int]:
    """Node type -> nodes the autoscaler is launching or starting now (empty where no
    autoscaler reports). Reads the v2 SDK's status or the v1 monitor's report."""
    try:
        from ray.autoscaler.v2.utils import is_autoscaler_v2

        if is_autoscaler_v2():
            return _v2_launches()
    except Exception:
        pass
    from ray.experimental.internal_kv import _internal_kv_get, _internal_kv_initialized

    if not _internal_kv_initialized():
        return {}
    raw = _internal_kv_get(AUTOSCALING_STATUS_KEY)
    if not raw:
        return {}
    report = (json.loads(raw).get("autoscaler_report") or {})
    launching = {k: int(v) for k, v in (report.get("pending_launches") or {}).items() if v}
    for node in report.get("pending_nodes") or []:
        node_type = node[2] if len(node) > 2 else "node"
        launching[node_type] = launching.get(node_type, 0) + 1
    return launching


def _v2_launches() -> dict[str, int]:
    import ray
    from ray.autoscaler.v2.sdk import get_cluster_status

    status = get_cluster_status(ray.get_runtime_context().gcs_address)
    launching: dict[str, int] = {}
    for launch in status.pending_launches:
        launching[launch.instance_type_name] = (
            launching.get(launch.instance_type_name, 0) + int(launch.count))
    for node in status.pending_nodes:
        launching[node.ray_node_type_name] = launching.get(node.ray_node_type_name, 0) + 1
    return launching


def live_nodes() -> list[dict[str, float]]:
    import ray

    return [dict(n.get("Resources", {})) for n in ray.nodes() if n.get("Alive")]


def _unheld(bundles: Sequence[Mapping[str, float]],
            nodes: list[dict[str, float]]) -> list[Mapping[str, float]]:
    """The bundles that fit no live node's totals (free or not)."""
    return [bundle for bundle in bundles if bundle and not any(
        all(v <= node.get(k, 0.0) + 1e-9 for k, v in bundle.items() if v) for node in nodes)]


class PlacementWatch(Callback):
    """Tune callback: progress lines while nodes are added, a bounded wait otherwise."""

    def __init__(self, bundles: Sequence[Mapping[str, float]], timeout_s: float,
                 poll_s: float = 2.0, launches: Callable[[], dict[str, int]] | None = None,
                 nodes: Callable[[], list[dict[str, float]]] | None = None) -> None:
        self.bundles = [dict(b) for b in bundles]
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self._launches = launches or autoscaler_launches
        self._nodes = nodes or live_nodes
        self._last_poll = float("-inf")
        self._stuck_since: float | None = None
        self._said = ""

    def __getstate__(self) -> dict[str, Any]:  # Tune pickles callbacks with its state
        state = dict(self.__dict__)
        state["_launches"] = state["_nodes"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._launches = self._launches or autoscaler_launches
        self._nodes = self._nodes or live_nodes

    def on_step_begin(self, iteration: int, trials: list, **info: Any) -> None:
        now = time.monotonic()
        if now - self._last_poll < self.poll_s:
            return
        self._last_poll = now
        if not any(trial.status in ("PENDING", "RUNNING") for trial in trials):
            self._stuck_since = None
            return
        self.check(now)

    def check(self, now: float) -> None:
        """One look at the cluster while trials are under way; raises PlacementTimeout if
        a bundle fits no live node and no node has been added for ``timeout_s``."""
        unheld = _unheld(self.bundles, self._nodes())
        if not unheld:
            self._stuck_since = None  # a live node can hold each bundle once it is free
            return
        launching = self._launches()
        if launching:
            self._stuck_since = None
            adding = ", ".join(f"{n} x {name}" for name, n in sorted(launching.items()))
            self._say(f"raystudy: waiting for nodes: the autoscaler is adding {adding}")
            return
        if self._stuck_since is None:
            self._stuck_since = now
            self._say(f"raystudy: waiting for a node with {show_resources(unheld[0])} for a trial; "
                      "no node is being added yet")
        elif now - self._stuck_since >= self.timeout_s:
            raise PlacementTimeout(
                f"a trial asks for {show_resources(unheld[0])} in one place, but no node of the "
                f"cluster has that and the autoscaler added none in {self.timeout_s:g} s: "
                "no node type fits it "
                "(lower --workers/--cpus-per-worker/--gpus-per-worker, add a node type, or "
                "raise --placement-timeout if nodes are slow to come)")

    def _say(self, line: str) -> None:
        if line != self._said:
            print(line, file=sys.stderr, flush=True)
            self._said = line
