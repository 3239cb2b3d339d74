"""Helpers for the tests that drive the real CLI with the test-only ``fault_test`` study
in a subprocess (its own embedded Ray): command lines, environment, logs it writes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from cluster_helpers import BIN, base_env

HERE = Path(__file__).resolve().parent


def _env() -> dict[str, str]:
    env = base_env(RAY_AUTH_MODE="disabled")  # an embedded Ray; no cluster, no token
    env["PYTHONPATH"] = os.pathsep.join((str(HERE), env["PYTHONPATH"]))
    return env


def _cli(tmp: Path, *args: str) -> list[str]:
    profile = tmp / "quick.yaml"
    profile.write_text("config: {}\n")
    return [str(BIN / "python"), str(HERE / "ft_cli.py"), *args, "--profile", str(profile),
            "--storage", str(tmp / "runs"), "--set", f"log_dir={tmp}"]


def _run(cmd: list[str], timeout: float = 240, code: int = 0
         ) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(cmd, env=_env(), text=True, capture_output=True, timeout=timeout)
    assert result.returncode == code, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def _steps(tmp: Path) -> list[tuple[int, int, int]]:
    """``(tag, step, pid)`` of every step the trials logged, in order."""
    return [(tag, step, pid) for tag, step, pid, _ in _node_steps(tmp)]


def _node_steps(tmp: Path) -> list[tuple[int, int, int, str]]:
    """``(tag, step, pid, node id)`` of every step the trials logged, in order."""
    lines = (tmp / "steps.log").read_text().split("\n")
    return [(int(t), int(s), int(p), node) for t, s, p, node in
            (line.split() for line in lines if line.strip())]


def _space(tmp: Path, text: str) -> str:
    path = tmp / "space.yaml"
    path.write_text(text)
    return str(path)


def _terminated(run_dir: Path) -> set[int]:
    """Tags of the trials Tune's saved experiment state records as finished."""
    states = sorted(run_dir.glob("experiment_state-*.json"))
    try:
        data = json.loads(states[-1].read_text()) if states else {}
    except (json.JSONDecodeError, OSError):
        return set()
    done = set()
    for trial_json, _ in data.get("trial_data", []):
        trial = json.loads(trial_json) if isinstance(trial_json, str) else trial_json
        if trial.get("status") == "TERMINATED":
            done.add(int(trial["config"]["tag"]))
    return done
