"""A throwaway PostgreSQL server for tests: ``initdb`` into a temp dir, ``pg_ctl -w start``
on 127.0.0.1 and a free port, ``pg_ctl stop -m fast`` and the dir removed on exit.

PostgreSQL refuses to run as root, so under root the server belongs to the ``postgres``
OS user (Debian's package makes it) and its binaries run through ``runuser``; the temp
dir is given to that user. Authentication is ``trust`` and the server listens on
loopback only, its Unix socket inside the temp dir (no clash with a system server). The
superuser is ``postgres``, whoever runs it. Without an ``initdb`` (``make test`` installs
Debian's ``postgresql`` where it can) ``find_bin_dir()`` is None and the fixture skips.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUPERUSER = "postgres"
OS_USER = "postgres"  # who runs the server when the tests run as root


def find_bin_dir() -> Path | None:
    """The folder of ``initdb``/``pg_ctl``: Debian's newest ``/usr/lib/postgresql/N/bin``,
    else wherever ``initdb`` is on PATH; None where there is none."""
    def major(path: str) -> int:
        found = re.search(r"/postgresql/(\d+)/", path)
        return int(found.group(1)) if found else 0

    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=major)
    if debian:
        return Path(debian[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def why_not() -> str | None:
    """Why no server can be started here (the skip reason), or None when one can."""
    if find_bin_dir() is None:
        return ("no PostgreSQL server here (no initdb in /usr/lib/postgresql/*/bin or on "
                "PATH): install Debian's postgresql package (make test does, as root)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(OS_USER)
        except KeyError:
            return f"running as root and there is no '{OS_USER}' OS user to run PostgreSQL"
        if not (shutil.which("runuser") or shutil.which("su")):
            return "running as root with neither runuser nor su to run PostgreSQL as postgres"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_server_user(cmd: list[str]) -> list[str]:
    """``cmd`` as the OS user that owns the server (``postgres`` under root)."""
    if os.geteuid() != 0:
        return cmd
    if shutil.which("runuser"):
        return ["runuser", "-u", OS_USER, "--", *cmd]
    import shlex

    return ["su", OS_USER, "-s", "/bin/sh", "-c", shlex.join(cmd)]


@dataclass
class PostgresServer:
    """A running server: SQLAlchemy URLs onto it and a way to make databases."""

    port: int
    host: str = "127.0.0.1"
    log: Path = Path()

    def url(self, database: str, driver: str = "") -> str:
        """``postgresql[+driver]://postgres@127.0.0.1:PORT/database`` (trust: no password)."""
        scheme = f"postgresql+{driver}" if driver else "postgresql"
        return f"{scheme}://{SUPERUSER}@{self.host}:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _run(cmd: list[str], what: str, log: Path | None = None) -> None:
    done = subprocess.run(_as_server_user(cmd), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        tail = log.read_text()[-2000:] if log is not None and log.exists() else ""
        raise RuntimeError(f"{what} failed ({done.returncode}): "
                           f"{done.stdout[-2000:]}{done.stderr[-2000:]}{tail}")


@contextlib.contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """A fresh server in its own temp dir, stopped and removed on exit (see the module
    docstring); call ``why_not()`` first."""
    bin_dir = find_bin_dir()
    assert bin_dir is not None, why_not()
    root = Path(tempfile.mkdtemp(prefix="rs-pg-", dir="/tmp"))  # short: the socket path
    data, log = root / "data", root / "server.log"
    if os.geteuid() == 0:
        owner = pwd.getpwnam(OS_USER)
        os.chown(root, owner.pw_uid, owner.pw_gid)
    server = PostgresServer(port=_free_port(), log=log)
    try:
        _run([str(bin_dir / "initdb"), "-D", str(data), "--auth=trust", "-U", SUPERUSER,
              "-E", "UTF8", "--no-sync"], "initdb")
        options = (f"-c listen_addresses={server.host} -p {server.port} -k {root} "
                   "-c fsync=off -c full_page_writes=off")  # throwaway: no durability
        _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60",
              "-o", options, "start"], "pg_ctl start", log)
        yield server
    finally:
        try:
            if (data / "postmaster.pid").exists():  # also after a start that timed out
                _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                     "pg_ctl stop", log)
        finally:
            shutil.rmtree(root, ignore_errors=True)


def open_and_write(url: str, name: str, barrier: Any, results: Any) -> None:
    """One writer process: wait at ``barrier`` for the others, then open the database
    through raystudy and add a study with three finished trials; puts ``(name, trials in
    its study)`` on ``results``, or ``(name, the error)``."""
    import optuna

    from raystudy.platform.tracking.optuna_mirror import open_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    barrier.wait(timeout=120)
    try:
        study = optuna.create_study(storage=open_storage(url), study_name=name)
        study.optimize(lambda trial: trial.suggest_float("x", 0.0, 1.0), n_trials=3)
        results.put((name, len(study.trials)))
    except Exception as exc:
        results.put((name, f"{type(exc).__name__}: {exc}"))
