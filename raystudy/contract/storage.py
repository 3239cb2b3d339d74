"""Where run folders and data live: a local path or a URI, in one place.

URIs are what pyarrow opens: ``s3://bucket/prefix``, ``gs://bucket/prefix``, ``file:///abs``
and S3-compatible stores that are not AWS (MinIO, Ceph, on-prem), named with pyarrow's
query options: ``s3://bucket/runs?endpoint_override=http://host:9000&region=us-east-1``
(``scheme=http`` too). Without ``region`` pyarrow asks AWS for the bucket's region, so
give it for stores that are not AWS. Credentials come from the usual ``AWS_*``
variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``),
read by pyarrow itself; never put them in the URI.

``join`` keeps the query at the end (``os.path.join`` or an f-string would put it in the
middle of the path). Every failure of a store (no such bucket, a server that does not
answer, access denied, a query key pyarrow does not know) is one ``UserError`` line
naming the URI. Local paths take the same functions, so callers need not branch.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from raystudy.errors import UserError


def is_remote(location: str | os.PathLike) -> bool:
    """A URI (s3://, gs://, file://, hdfs://) rather than a local path."""
    return "://" in str(location)


def root(storage: str) -> str:
    """``--storage`` as an absolute local path, or the URI unchanged."""
    return storage if is_remote(storage) else os.path.abspath(os.path.expanduser(storage))


def join(location: str | os.PathLike, *parts: str) -> str:
    """``location/part/...``; on a URI the query string stays at the end."""
    location = str(location)
    if not is_remote(location):
        return os.path.join(location, *parts)
    scheme, netloc, path, query, fragment = urlsplit(location)
    segments = [s for s in (path.strip("/"), *(p.strip("/") for p in parts)) if s]
    return urlunsplit((scheme, netloc, "/" + "/".join(segments) if segments else "", query,
                       fragment))


def name(location: str | os.PathLike) -> str:
    """The last path segment of a local path or URI (the query left out)."""
    location = str(location)
    path = urlsplit(location).path if is_remote(location) else location
    return path.rstrip("/").rsplit("/", 1)[-1]


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:300]


@contextlib.contextmanager
def _store_errors(location: str, doing: str) -> Iterator[None]:
    """pyarrow's OSError (network, bucket, permission) and ArrowInvalid as one line."""
    try:
        yield
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot {doing} {location}: {_first_line(exc)}") from None


def filesystem(location: str | os.PathLike) -> tuple[Any, str]:
    """The pyarrow filesystem of ``location`` and the path on it (query options applied)."""
    import pyarrow.fs

    location = str(location)
    if not is_remote(location):
        return pyarrow.fs.LocalFileSystem(), os.path.abspath(os.path.expanduser(location))
    with _store_errors(location, "open"):
        return pyarrow.fs.FileSystem.from_uri(location)


def data_source(location: str | os.PathLike) -> tuple[str, Any]:
    """``(path, filesystem)`` for a Ray Data read (``filesystem=``): a URI's endpoint and
    region go into the filesystem, built here once, and the path loses the query, so no
    reader has to parse the query itself (Ray Data 2.60's own resolution does; others
    may not). A local path gets no filesystem."""
    location = str(location)
    if not is_remote(location):
        return os.path.abspath(os.path.expanduser(location)), None
    fs, _ = filesystem(location)
    scheme, netloc, path, _query, _fragment = urlsplit(location)
    return urlunsplit((scheme, netloc, path, "", "")), fs


def exists(location: str | os.PathLike) -> bool:
    """A file or folder is at ``location``."""
    if not is_remote(location):
        return os.path.exists(location)
    import pyarrow.fs

    fs, path = filesystem(location)
    with _store_errors(str(location), "read"):
        return fs.get_file_info(path).type != pyarrow.fs.FileType.NotFound


def _entries(location: str | os.PathLike, kind: Any) -> dict[str, Any]:
    import pyarrow.fs

    fs, path = filesystem(location)
    with _store_errors(str(location), "list"):
        infos = fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True))
    return {info.base_name: info for info in infos if info.type == kind}


def list_dirs(location: str | os.PathLike) -> list[str]:
    """Names of the folders directly under ``location`` (none if it does not exist)."""
    import pyarrow.fs

    return sorted(_entries(location, pyarrow.fs.FileType.Directory))


def list_files(location: str | os.PathLike, pattern: str = "*") -> dict[str, float]:
    """Files directly under ``location`` matching ``pattern``: name -> mtime (0 unknown)."""
    import pyarrow.fs

    files = _entries(location, pyarrow.fs.FileType.File)
    return {name: info.mtime.timestamp() if info.mtime else 0.0
            for name, info in files.items() if fnmatch.fnmatch(name, pattern)}


def read_text(location: str | os.PathLike) -> str:
    """The text of one file; a missing file or an unreachable store is a UserError."""
    fs, path = filesystem(location)
    with _store_errors(str(location), "read"), fs.open_input_stream(path) as stream:
        return stream.read().decode()


def read_json(location: str | os.PathLike) -> Any:
    """One JSON file; a file that is not JSON is a UserError naming it."""
    try:
        return json.loads(read_text(location))
    except ValueError:
        raise UserError(f"{location} is corrupt (not JSON)") from None


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` next to ``path`` and rename it over; a failed write leaves no temp."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(location: str | os.PathLike, text: str) -> None:
    """Write one file: atomically on a local disk, as one object on a store."""
    location = str(location)
    if not is_remote(location):
        local = Path(location).expanduser()
        local.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(local, text)
        return
    fs, path = filesystem(location)
    with _store_errors(location, "write"):
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)  # file://, hdfs:// need it
        with fs.open_output_stream(path) as stream:
            stream.write(text.encode())


def write_json(location: str | os.PathLike, data: Any) -> None:
    """Write ``data`` as indented JSON (``str`` for what JSON cannot hold)."""
    write_text(location, json.dumps(data, indent=2, default=str) + "\n")


def check_writable(location: str, what: str) -> None:
    """A probe object written and removed, so a wrong bucket, endpoint or key fails now."""
    probe = join(location, f".raystudy-probe-{uuid.uuid4().hex[:12]}")
    fs, path = filesystem(probe)
    try:
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(path) as stream:
            stream.write(b"probe")
        fs.delete_file(path)
    except (OSError, ValueError) as exc:
        raise UserError(f"{what} {location} is not writable: {_first_line(exc)}") from None


def remove(location: str | os.PathLike) -> None:
    """Remove a folder and everything under it; a failure is ignored (best effort)."""
    fs, path = filesystem(location)
    with contextlib.suppress(OSError, ValueError):
        fs.delete_dir(path)


def download(location: str | os.PathLike, local_dir: Path, recursive: bool = True) -> Path:
    """Copy the folder at ``location`` into ``local_dir`` (only its own files unless
    ``recursive``); returns ``local_dir``."""
    import pyarrow.fs

    fs, path = filesystem(location)
    local_dir.mkdir(parents=True, exist_ok=True)
    local = pyarrow.fs.LocalFileSystem()
    with _store_errors(str(location), "download"):
        if recursive:
            pyarrow.fs.copy_files(path, str(local_dir), source_filesystem=fs,
                                  destination_filesystem=local)
        else:
            for file in list_files(location):
                pyarrow.fs.copy_files(f"{path.rstrip('/')}/{file}", str(local_dir / file),
                                      source_filesystem=fs, destination_filesystem=local)
    return local_dir


def upload(local_dir: Path, location: str | os.PathLike) -> None:
    """Copy every file under ``local_dir`` to the folder at ``location`` (overwriting)."""
    import pyarrow.fs

    fs, path = filesystem(location)
    with _store_errors(str(location), "upload to"):
        pyarrow.fs.copy_files(str(local_dir), path,
                              source_filesystem=pyarrow.fs.LocalFileSystem(),
                              destination_filesystem=fs)


@contextlib.contextmanager
def local_copy(location: str | os.PathLike, recursive: bool = True) -> Iterator[Path]:
    """The folder itself when local; else a temporary download of it, removed afterwards."""
    if not is_remote(location):
        yield Path(location)
        return
    with tempfile.TemporaryDirectory(prefix="raystudy-") as tmp:
        yield download(location, Path(tmp) / name(location), recursive=recursive)


AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
            "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_ENDPOINT_URL")


def aws_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``AWS_*`` credentials and endpoint variables that are set (for a job's workers)."""
    found: Mapping[str, str] = os.environ if environ is None else environ
    return {key: found[key] for key in AWS_VARS if found.get(key)}
