"""The Ray session: an embedded local Ray by default, or an existing cluster.

No ``--address`` and no ``RAY_ADDRESS``: start a local Ray inside this process
(``ray.init(address="local")``). With either: attach to that cluster. Ray 2.60 turns on
token authentication for clusters started with ``ray start``; a client of such a cluster
needs ``RAY_AUTH_MODE=token`` and the token, which we never switch off on our own.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

from raystudy.errors import UserError


def resolve_address(address: str | None) -> str | None:
    """The cluster to attach to: ``--address`` first, then ``RAY_ADDRESS``, else None;
    ``local`` asks for the embedded Ray by name (None)."""
    target = address or os.environ.get("RAY_ADDRESS") or None
    return None if target == "local" else target


def find_local_cluster(address: str | None) -> str | None:
    """``address`` as given; where none is (no ``--address``, no ``RAY_ADDRESS``), the
    address of a cluster that ``raystudy cluster start`` runs on this machine, if any:
    attaching to it takes a second where starting an embedded Ray takes several.
    Called before Ray is imported, so the token mode it sets applies."""
    if address or os.environ.get("RAY_ADDRESS"):
        return address
    from raystudy.platform.cluster.localcluster import running, state_dir

    state = running(state_dir())
    if state is None:
        return None
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    print(f"raystudy: attaching to the local cluster at {state['address']} (started with "
          "`raystudy cluster start`; --address local for an embedded Ray)", flush=True)
    return state["address"]


def _auth_hint(message: str) -> str:
    lowered = message.lower()
    if "token" in lowered or "auth" in lowered or "unauthenticated" in lowered:
        return (
            " (the cluster uses token authentication: set RAY_AUTH_MODE=token and "
            "RAY_AUTH_TOKEN, or copy the head node's ~/.ray/auth_token)"
        )
    return ""


@contextlib.contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[str]:
    """Start or attach to Ray for the duration of a command; yields a description."""
    import ray

    if ray.is_initialized():
        yield "existing Ray session"
        return
    target = resolve_address(address)
    quiet = logging.WARNING  # the platform says where it runs, with the dashboard URL
    try:
        if target:
            context = ray.init(address=target, log_to_driver=True, logging_level=quiet)
            where = f"Ray cluster at {target}"
        else:
            context = ray.init(address="local", num_cpus=num_cpus, log_to_driver=True,
                               logging_level=quiet)
            where = "embedded local Ray"
        if getattr(context, "dashboard_url", None):
            where += f" (dashboard http://{context.dashboard_url})"
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(
            f"cannot connect to Ray at {target or 'local'}: {first_line}{_auth_hint(str(exc))}"
        ) from None
    try:
        yield where
    finally:
        ray.shutdown()
