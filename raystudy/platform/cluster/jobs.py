"""``raystudy submit`` and ``raystudy jobs``: run a command on a Ray cluster as a Ray Job.

The Ray Jobs SDK (``JobSubmissionClient``, needs ``ray[default]``) ships the working
directory to the cluster (without run folders, data, virtualenvs or git history) and
runs the entrypoint there, usually ``raystudy sweep ...``; the job's driver attaches
to the cluster through the ``RAY_ADDRESS`` the job sets.

Address: ``--address`` (the dashboard URL, e.g. ``http://head:8265``), else
``RAY_API_SERVER_ADDRESS`` / ``RAY_ADDRESS`` as Ray reads them, else
``http://127.0.0.1:8265``.

Token authentication (Ray 2.60): a cluster started with a token rejects requests
without one. The client sends the token when ``RAY_AUTH_MODE=token`` is set, read from
``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``. raystudy never
switches authentication off; when the token is missing it says what to set.

Object storage: the ``AWS_*`` variables set in the submitting shell (credentials, region,
``AWS_ENDPOINT_URL``) go into the job's ``runtime_env`` env vars, so the job's driver and
every worker can read and write ``--storage s3://...``; ``submit`` names them, never their
values. They are part of the job's runtime_env, which the cluster's dashboard shows.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
import time
from collections.abc import Sequence
from typing import Any

from raystudy.contract import storage
from raystudy.errors import UserError

DEFAULT_ADDRESS = "http://127.0.0.1:8265"
EXCLUDES = (
    "/runs/", "/data/", ".venv/", ".git/", "**/__pycache__/", ".pytest_cache/",
    ".ruff_cache/", ".hypothesis/", "*.egg-info/", "mlruns/",
)
AUTH_HINT = (
    "the cluster requires a token: set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN=<token> "
    "(or RAY_AUTH_TOKEN_PATH, or copy the head node's ~/.ray/auth_token; "
    "`ray get-auth-token` prints it on the head node)"
)


def _address(address: str | None) -> str | None:
    return address or os.environ.get("RAY_API_SERVER_ADDRESS") or os.environ.get(
        "RAY_ADDRESS") or DEFAULT_ADDRESS


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _is_auth_error(exc: BaseException) -> bool:
    from ray.exceptions import AuthenticationError

    return isinstance(exc, AuthenticationError)


def _auth_error(address: str, exc: BaseException) -> UserError:
    if "invalid" in str(exc).lower() or "403" in str(exc):
        return UserError(f"{address} rejected the token (RAY_AUTH_TOKEN or ~/.ray/auth_token "
                         "does not match the cluster's); " + AUTH_HINT)
    return UserError(f"{address}: {AUTH_HINT}")


def client(address: str | None = None) -> Any:
    """A connected ``JobSubmissionClient``; connection and auth failures are UserErrors."""
    target = _address(address)
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError:
        raise UserError("raystudy submit needs ray[default]: pip install 'ray[default]'") from None
    try:
        return JobSubmissionClient(target)
    except Exception as exc:  # the SDK raises ConnectionError, RuntimeError, requests errors
        if _is_auth_error(exc):
            raise _auth_error(target, exc) from None
        raise UserError(f"cannot reach the Ray Jobs API at {target}: {_first_line(exc)} "
                        "(is the cluster up and --address its dashboard URL?)") from None


def _call(address: str, job_id: str | None, fn: Any, *args: Any) -> Any:
    """Call an SDK method, turning its errors into one-line UserErrors."""
    try:
        return fn(*args)
    except Exception as exc:
        if _is_auth_error(exc):
            raise _auth_error(address, exc) from None
        text = str(exc)
        if job_id is not None and ("404" in text or "does not exist" in text):
            raise UserError(f"no job '{job_id}' on {address} (see `raystudy jobs list`)") from None
        raise UserError(f"Ray Jobs API at {address}: {_first_line(exc)}") from None


def parse_env(pairs: Sequence[str]) -> dict[str, str]:
    """``K=V`` strings to a dict; a pair without ``=`` is a UserError."""
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UserError(f"--env expects KEY=VALUE, got '{pair}'")
        env[key] = value
    return env


def job_env(pairs: Sequence[str], environ: dict[str, str] | None = None
            ) -> tuple[dict[str, str], list[str]]:
    """The job's environment variables and the names taken from here: the ``AWS_*``
    credentials, region and endpoint that are set (object storage on every node), then
    ``--env K=V`` pairs, which win."""
    explicit = parse_env(pairs)
    forwarded = {k: v for k, v in storage.aws_env(environ).items() if k not in explicit}
    return {**forwarded, **explicit}, sorted(forwarded)


def runtime_env(working_dir: str, pip: Sequence[str] = (), env: dict[str, str] | None = None,
                excludes: Sequence[str] = EXCLUDES) -> dict[str, Any]:
    """The job's runtime_env: the working dir (minus runs/data/venv/git), pip, env vars."""
    if not os.path.isdir(working_dir):
        raise UserError(f"--working-dir {working_dir} is not a directory")
    out: dict[str, Any] = {"working_dir": os.path.abspath(working_dir), "excludes": list(excludes)}
    if pip:
        out["pip"] = list(pip)
    if env:
        out["env_vars"] = dict(env)
    return out


def dashboard_url(address: str, job_id: str) -> str:
    return f"{address.rstrip('/')}/#/jobs/{job_id}"


def submit(entrypoint: Sequence[str], address: str | None = None, working_dir: str = ".",
           pip: Sequence[str] = (), env: Sequence[str] = (), job_id: str | None = None) -> str:
    """Submit ``entrypoint`` as a Ray Job; prints and returns the job (submission) id."""
    words = [w for w in entrypoint if w != "--"] if entrypoint[:1] == ["--"] else list(entrypoint)
    if not words:
        raise UserError("nothing to submit: give the command after --, "
                        "e.g. raystudy submit -- raystudy sweep STUDY")
    env_vars, forwarded = job_env(env)
    renv = runtime_env(working_dir, pip, env_vars)
    jobs = client(address)
    if forwarded:  # names only: the values stay out of the terminal and its logs
        print(f"raystudy: passing {', '.join(forwarded)} from this shell to the job "
              "(object storage credentials; --env KEY=VALUE overrides)", file=sys.stderr)
    if words[0] == "raystudy" and words[1:2] in (["run"], ["sweep"]) and not any(
            w == "--storage" or w.startswith("--storage=") for w in words):
        print("raystudy: note: the job writes its run folder to ./runs inside the job's "
              "working dir on the head node; pass --storage s3://..., gs://... or a shared "
              "path to keep it", file=sys.stderr)
    target = jobs.get_address()
    submitted = _call(target, None, lambda: jobs.submit_job(
        entrypoint=shlex.join(words), runtime_env=renv, submission_id=job_id))
    print(f"raystudy: submitted job {submitted}")
    print(f"raystudy: dashboard {dashboard_url(target, submitted)}")
    print(f"raystudy: follow with `raystudy jobs logs {submitted} --follow --address {target}`",
          flush=True)
    return submitted


def list_jobs(address: str | None = None) -> list[Any]:
    jobs = client(address)
    details = _call(jobs.get_address(), None, jobs.list_jobs)
    details = sorted(details, key=lambda d: d.start_time or 0)
    for info in details:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime((info.start_time or 0) / 1e3))
        print(f"{info.submission_id or info.job_id:32s} {info.status!s:10s} {started}  "
              f"{info.entrypoint}")
    return details


def status(job_id: str, address: str | None = None) -> str:
    jobs = client(address)
    info = _call(jobs.get_address(), job_id, jobs.get_job_info, job_id)
    print(f"{job_id}: {info.status}" + (f" ({info.message})" if info.message else ""))
    return str(info.status)


def logs(job_id: str, address: str | None = None, follow: bool = False) -> str | None:
    """Print a job's output; with ``follow``, stream it until the job ends and return
    its final status (so ``jobs logs --follow`` can exit 1 when the job failed)."""
    jobs = client(address)
    target = jobs.get_address()
    _call(target, job_id, jobs.get_job_info, job_id)
    if not follow:
        sys.stdout.write(_call(target, job_id, jobs.get_job_logs, job_id))
        return None

    async def tail() -> None:
        async for chunk in jobs.tail_job_logs(job_id):
            sys.stdout.write(chunk)
            sys.stdout.flush()

    _call(target, job_id, lambda: asyncio.run(tail()))
    final = str(jobs.get_job_status(job_id))
    print(f"raystudy: job {job_id} ended: {final}")
    return final


def stop(job_id: str, address: str | None = None) -> bool:
    jobs = client(address)
    stopped = _call(jobs.get_address(), job_id, jobs.stop_job, job_id)
    print(f"raystudy: {'stopping' if stopped else 'job already ended:'} {job_id}")
    return bool(stopped)


def wait(job_id: str, address: str | None = None, timeout_s: float = 600,
         poll_s: float = 2.0) -> str:
    """Block until the job is terminal (or ``timeout_s``); returns its status."""
    jobs = client(address)
    deadline = time.monotonic() + timeout_s
    while True:
        current = _call(jobs.get_address(), job_id, jobs.get_job_status, job_id)
        if current.is_terminal() or time.monotonic() > deadline:
            return str(current)
        time.sleep(poll_s)
