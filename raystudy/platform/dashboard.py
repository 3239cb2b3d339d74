"""``raystudy dashboard RUN_DIR``: optuna-dashboard on a run's database, until Ctrl-C.

The database is the one the sweep mirrored its trials into (``optuna.db`` in the run
folder, or the ``--optuna-storage`` URL saved with the request), so the page shows the
trial table, parameter importances, parallel coordinates and each trial's intermediate
values, live while the sweep runs. Needs the ``dashboard`` extra.
"""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path
from typing import Any

from raystudy.errors import DataError, UserError
from raystudy.platform.optuna_mirror import DEFAULT_DB, open_storage, storage_url
from raystudy.platform.registry import require_extra
from raystudy.platform.results import REQUEST_FILE


def run_storage_url(run_dir: Path) -> str:
    """The database URL of a run folder, from its saved request."""
    request_file = run_dir / REQUEST_FILE
    if not request_file.is_file():
        raise UserError(f"{run_dir} is not a raystudy run folder (no {REQUEST_FILE})")
    try:
        setting = json.loads(request_file.read_text()).get("optuna_storage")
    except (ValueError, AttributeError):
        raise DataError(f"{request_file} is corrupt (not JSON)") from None
    url = storage_url(setting, run_dir, local=True)
    if url is None:
        raise UserError(f"{run_dir} was run with --optuna-storage off: it has no database")
    if not setting and not (run_dir / DEFAULT_DB).is_file():  # the run folder's own
        raise UserError(f"{run_dir} has no {DEFAULT_DB} (made before the dashboard mirror, "
                        "or no trial has started yet)")
    return url


def _check_port(host: str, port: int) -> None:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UserError(f"cannot serve on {host}:{port} ({exc.strerror}); "
                            "pick another with --port") from None


def serve(run_dir: str, port: int = 8080, host: str = "127.0.0.1") -> None:
    """Serve optuna-dashboard for ``run_dir`` and block; Ctrl-C stops it."""
    require_extra("raystudy dashboard", "dashboard", ("optuna_dashboard",))
    folder = Path(run_dir)
    storage = open_storage(run_storage_url(folder))
    _check_port(host, port)
    from optuna_dashboard import run_server

    print(f"raystudy: optuna-dashboard for {folder} at http://{host}:{port}/dashboard/ "
          "(Ctrl-C to stop)", flush=True)
    # Ctrl-C and SIGTERM stop the server, even when started from a script that ignores
    # SIGINT for its background jobs.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        run_server(storage, host=host, port=port)  # returns on Ctrl-C, or raises it
    except KeyboardInterrupt:
        pass
    print("raystudy: dashboard stopped", flush=True)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
