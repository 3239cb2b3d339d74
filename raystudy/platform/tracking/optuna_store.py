"""The Optuna database of a run (optuna-dashboard reads it): where it is, opening it with
one-line errors, and what a trial's result adds to it. Ray-free, so an in-process run
(``raystudy run --in-process``) records its trial without importing Ray."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from raystudy.errors import UserError

DEFAULT_DB = "optuna.db"
TUNE_ID = "tune_trial_id"
_CONNECT_TIMEOUT_S = 10  # a PostgreSQL server that does not answer: one line after this
_SCHEMA_TRIES = 5  # drivers opening a new database at once: tries to create its tables


def storage_url(setting: str | None, run_dir: Path, local: bool) -> str | None:
    """The database of a run: ``--optuna-storage`` (``off`` disables), else SQLite in it."""
    if setting == "off":
        return None
    if setting:
        return setting
    if not local:
        raise UserError("--storage on object storage needs --optuna-storage URL for the "
                        "live dashboard database (e.g. postgresql://head:5432/optuna), "
                        "or --optuna-storage off")
    return f"sqlite:///{run_dir / DEFAULT_DB}"


def open_storage(url: str):
    """An Optuna RDB storage; a URL it cannot use is one line, its password hidden."""
    import optuna
    from sqlalchemy import exc as sa_exc

    sqlite = url.startswith("sqlite")
    for attempt in range(1, _SCHEMA_TRIES + 1):
        try:
            storage = optuna.storages.RDBStorage(url, engine_kwargs=_engine_kwargs(url))
            break
        except (sa_exc.IntegrityError, sa_exc.ProgrammingError) as exc:
            # Drivers that open a new database at once race to create Optuna's tables;
            # the losers fail on a duplicate, and on the next try the tables are there.
            if attempt == _SCHEMA_TRIES:
                raise UserError(f"--optuna-storage {shown_url(url)}: cannot open it "
                                f"({_first_line(exc)})") from None
        except ImportError as exc:
            scheme = url.split(":", 1)[0]
            hint = ("pip install psycopg2-binary" if scheme.endswith("+psycopg2") else
                    "pip install 'raystudy[postgres]' (psycopg)" if scheme.startswith("postgres")
                    else "install the driver SQLAlchemy names for it")
            raise UserError(f"--optuna-storage {shown_url(url)}: no database driver "
                            f"({_first_line(exc.__cause__ or exc)}); {hint}") from None
        except Exception as exc:
            raise UserError(f"--optuna-storage {shown_url(url)}: cannot open it "
                            f"({_first_line(exc)})") from None
    if sqlite:
        from sqlalchemy import event

        event.listen(storage.engine, "connect", _sqlite_pragmas)
        storage.engine.dispose()  # connections from now on get the pragmas
    return storage


def _engine_kwargs(url: str) -> dict[str, Any]:
    """SQLite waits for the lock rather than fail while the dashboard reads; PostgreSQL
    gives up on a server that does not answer after ``_CONNECT_TIMEOUT_S`` (psycopg's own
    default is 130 s), unless the URL sets ``connect_timeout``."""
    if url.startswith("sqlite"):
        return {"connect_args": {"timeout": 30}}
    if url.startswith("postgres") and "connect_timeout=" not in url:
        return {"connect_args": {"connect_timeout": _CONNECT_TIMEOUT_S}}
    return {}


def shown_url(url: str) -> str:
    """A database URL as it may be printed: the password replaced by ``***``."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def _sqlite_pragmas(connection: Any, record: Any) -> None:
    """WAL: the dashboard reads while the sweep writes; NORMAL sync: no fsync per write."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def result_attrs(result: dict[str, Any]) -> dict[str, float]:
    """The user attributes of a result: namespaced metrics, ``diverged``, the iteration."""
    out = {}
    for key, value in result.items():
        if "/" in key or key in ("diverged", "training_iteration"):
            number = _number(value)
            if number is not None and not math.isnan(number):
                out[key] = number
    return out
