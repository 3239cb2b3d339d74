"""A real S3-compatible server on loopback for tests: moto's server mode.

``s3_server()`` starts ``ThreadedMotoServer`` on a free port of 127.0.0.1 and stops it on
exit; the ``s3_server`` fixture (tests/conftest.py) wraps it with fake ``AWS_*``
credentials set for the test (subprocesses started with ``cluster_helpers.base_env()``
inherit them). ``server.uri(bucket, prefix)`` is the URI raystudy takes:
``s3://bucket/prefix?endpoint_override=http://127.0.0.1:PORT&region=us-east-1``.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

REGION = "us-east-1"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": REGION}
BUCKET = "raystudy-test"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class S3Server:
    """A running S3-compatible server: its endpoint and URIs onto it."""

    endpoint: str  # http://127.0.0.1:PORT
    region: str = REGION
    bucket: str = BUCKET  # made when the server starts

    def uri(self, bucket: str | None = None, prefix: str = "") -> str:
        """``s3://bucket/prefix?endpoint_override=...&region=...`` (the default bucket)."""
        path = f"{bucket or self.bucket}/{prefix.strip('/')}".rstrip("/")
        return f"s3://{path}?endpoint_override={self.endpoint}&region={self.region}"

    def make_bucket(self, name: str) -> None:
        import pyarrow.fs

        pyarrow.fs.S3FileSystem(endpoint_override=self.endpoint, region=self.region,
                                allow_bucket_creation=True).create_dir(name)

    def filesystem(self):
        """A pyarrow filesystem on the server, for looking at what a test wrote."""
        import pyarrow.fs

        return pyarrow.fs.S3FileSystem(endpoint_override=self.endpoint, region=self.region)

    def keys(self, prefix: str, bucket: str | None = None) -> list[str]:
        """Every object key under ``bucket/prefix``, relative to it, sorted."""
        import pyarrow.fs

        base = f"{bucket or self.bucket}/{prefix.strip('/')}".rstrip("/")
        infos = self.filesystem().get_file_info(
            pyarrow.fs.FileSelector(base, recursive=True, allow_not_found=True))
        return sorted(i.path[len(base) + 1:] for i in infos
                      if i.type == pyarrow.fs.FileType.File)

    def reset(self) -> None:
        """Empty the store (every bucket): moto's own reset call."""
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/moto-api/reset",
                                                      method="POST"), timeout=10).close()

    def read(self, key: str, bucket: str | None = None) -> bytes:
        with self.filesystem().open_input_stream(f"{bucket or self.bucket}/{key}") as f:
            return f.read()


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on a free loopback port with the default bucket made; the caller
    sets credentials (any value: moto does not check them)."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        s3 = S3Server(endpoint=f"http://127.0.0.1:{port}")
        s3.reset()  # moto keeps its objects per process, not per server
        s3.make_bucket(s3.bucket)
        yield s3
    finally:
        s3.reset()
        server.stop()
