"""``raystudy dashboard RUN_DIR``: optuna-dashboard on a run's database, until Ctrl-C.

The database is the one the sweep mirrored its trials into (``optuna.db`` in the run
folder, or the ``--optuna-storage`` URL saved with the request), so the page shows the
trial table, parameter importances, parallel coordinates and each trial's intermediate
values, live while the sweep runs. ``raystudy dashboard --optuna-storage URL`` serves a
database by its URL instead, every study in it: a PostgreSQL server that a cluster's
sweeps share, whose run folders may be on object storage. Needs the ``dashboard`` extra.
"""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path
from typing import Any

from raystudy.contract.data import require_extra
from raystudy.errors import DataError, UserError
from raystudy.platform.runs.results import REQUEST_FILE
from raystudy.platform.runs.trials import read_index
from raystudy.platform.tracking.optuna_store import DEFAULT_DB, open_storage, shown_url, storage_url


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
    if not setting and not (run_dir / DEFAULT_DB).is_file() and _in_process(run_dir):
        from raystudy.platform.execution.inprocess import record_run

        record_run(run_dir, url)  # an in-process run's database is made on first look
    if not setting and not (run_dir / DEFAULT_DB).is_file():  # the run folder's own
        raise UserError(f"{run_dir} has no {DEFAULT_DB} (made before the dashboard mirror, "
                        "or no trial has started yet)")
    return url


def _in_process(run_dir: Path) -> bool:
    try:
        index = read_index(run_dir)
    except DataError:
        return False
    return index is not None and index.in_process


def _check_port(host: str, port: int) -> None:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UserError(f"cannot serve on {host}:{port} ({exc.strerror}); "
                            "pick another with --port") from None


def serve(run_dir: str | None, port: int = 8080, host: str = "127.0.0.1",
          url: str | None = None) -> None:
    """Serve optuna-dashboard for ``run_dir``'s database, or the database at ``url``
    (``--optuna-storage``: a server that several sweeps share), and block; Ctrl-C stops it."""
    if (run_dir is None) == (url is None):
        raise UserError("raystudy dashboard takes RUN_DIR or --optuna-storage URL (one of them)")
    require_extra("raystudy dashboard", "dashboard", ("optuna_dashboard",))
    shown = run_dir if url is None else shown_url(url)
    storage = open_storage(url or run_storage_url(Path(run_dir)))
    _check_port(host, port)
    from optuna_dashboard import wsgi

    app = wsgi(storage)
    print(f"raystudy: optuna-dashboard for {shown} at http://{host}:{port}/dashboard/ "
          "(Ctrl-C to stop)", flush=True)
    _serve_until_stopped(app, host, port)
    print("raystudy: dashboard stopped", flush=True)


def _serve_until_stopped(app: Any, host: str, port: int) -> None:
    """wsgiref's server until Ctrl-C or SIGTERM, which shut it down between requests: a
    KeyboardInterrupt raised inside a request is swallowed by wsgiref's error handler and
    the server would go on (seen with a signal sent right after a reply). Installed here
    also for a script that ignores SIGINT for its background jobs."""
    import threading
    from wsgiref.simple_server import make_server

    server = make_server(host, port, app)

    def stop(signum: int, frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
