"""Ctrl-C, a disk that fills up mid-sweep, and corrupt run files, through the real CLI.

One sweep of the test-only ``fault_test`` study lives through all of it: Ctrl-C (to the
whole process group, as a terminal sends it) -> exit 130 with the resume command and
no Ray advice; ``--resume`` without ``--name`` picks it; the storage fills up ->
exit 2 in one line with the state saved; ``--resume`` finishes it without redoing
finished trials; then ``raystudy report`` meets truncated, empty and garbage files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from ft_helpers import _cli, _env, _space, _steps, _terminated

from raystudy.platform.runs.results import load_results

pytestmark = pytest.mark.ray


def _start(cmd: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(cmd, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


def _wait_for_steps(tmp: Path, at_least: int, driver: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 180
    while not ((tmp / "steps.log").exists() and len(_steps(tmp)) >= at_least):
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < deadline, "the sweep made no progress"
        time.sleep(0.1)


def _finish(driver: subprocess.Popen[str]) -> tuple[int, list[str]]:
    out, err = driver.communicate(timeout=180)
    return driver.returncode, (out + err).strip().splitlines()


def test_ctrl_c_full_disk_and_resume(tmp_path: Path, mount_tmpfs) -> None:
    storage = mount_tmpfs("48m")
    env = {**_env(), "RAYSTUDY_MIN_FREE_MB": "12"}
    space = _space(tmp_path, "params:\n  tag: {grid: [0, 1, 2, 3, 4, 5]}\n")
    base = _cli(tmp_path, "sweep", "fault_test", "--set", "steps=4", "--set", "sleep_s=0.25")
    base[base.index("--storage") + 1] = str(storage)
    run_dir = storage / "s"

    # Ctrl-C: Tune's graceful stop, exit 130, the resume command in one line.
    driver = _start([*base, "--space", space, "--name", "s"], env)
    _wait_for_steps(tmp_path, 2, driver)
    os.killpg(driver.pid, signal.SIGINT)
    code, err = _finish(driver)
    assert code == 130, err
    assert err[-1].startswith("raystudy: interrupted (")
    assert err[-1].endswith(f"resume with `raystudy sweep fault_test --resume --name s "
                            f"--storage {storage}`")
    joined = "\n".join(err)
    assert "Traceback" not in joined and "Tuner.restore" not in joined, joined
    assert "6 trial(s): 6 finished" not in joined, joined  # Tune's stop is no finish
    assert list(run_dir.glob("experiment_state-*.json"))
    finished_then = _terminated(run_dir)

    # --resume without --name picks it; then the disk fills up: one line, exit 2.
    driver = _start([*base, "--resume"], env)
    _wait_for_steps(tmp_path, len(_steps(tmp_path)) + 2, driver)
    ballast = storage / "ballast"
    free = os.statvfs(storage).f_bavail * os.statvfs(storage).f_frsize
    ballast.write_bytes(b"\0" * (free - 6 * 1024**2))
    code, err = _finish(driver)
    assert code == 2, err
    assert err[-1].startswith(f"raystudy: error: --storage {storage} is almost full")
    assert "--resume --name s" in err[-1]
    assert "Traceback" not in "\n".join(err) and "6 finished" not in "\n".join(err)
    ballast.unlink()

    # Resume again: everything finishes, finished trials are not run again.
    done = subprocess.run([*base, "--resume", "--name", "s"], env=env, text=True,
                          capture_output=True, timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = load_results(run_dir)
    assert sorted(t.params["tag"] for t in results) == [0, 1, 2, 3, 4, 5]
    assert all(t.status == "finished" for t in results)
    starts = [tag for tag, step, _ in _steps(tmp_path) if step == 1]
    assert all(starts.count(tag) == 1 for tag in finished_then), starts
    import optuna  # the dashboard's study went through all of it without duplicates

    trials = optuna.load_study(study_name="s", storage=f"sqlite:///{run_dir}/optuna.db").trials
    assert sorted(t.params["tag"] for t in trials) == [0, 1, 2, 3, 4, 5]
    assert {t.state.name for t in trials} == {"COMPLETE"}
    assert len({t.user_attrs["tune_trial_id"] for t in trials}) == 6
    _corrupt_files_are_rebuilt_or_one_line(run_dir, env, mount_tmpfs)


def _report(run_dir: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    cmd = _cli(run_dir.parent, "report", str(run_dir), *extra)
    cmd = cmd[:cmd.index("--profile")]  # report takes only the folder
    return subprocess.run(cmd, env=env, text=True, capture_output=True, timeout=120)


def _corrupt_files_are_rebuilt_or_one_line(run_dir: Path, env, mount_tmpfs) -> None:
    summary = run_dir / "summary.json"
    good = json.loads(summary.read_text())
    for broken in (summary.read_text()[:40], "", "garbage{"):
        summary.write_text(broken)
        result = _report(run_dir, env)
        assert result.returncode == 0, result.stderr
        assert json.loads(summary.read_text())["counts"] == good["counts"]

    state = run_dir / "trials.json"           # the trial index the report reads
    intact = state.read_text()
    state.write_text(intact[: len(intact) // 2])
    result = _report(run_dir, env)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert f"{state.name} is corrupt" in lines[0]
    state.write_text(intact)

    read_only = mount_tmpfs("8m")
    subprocess.run(["cp", "-a", f"{run_dir}/.", str(read_only)], check=True)
    subprocess.run(["mount", "-o", "remount,ro", str(read_only)], check=True)
    result = _report(read_only, env)
    assert result.returncode == 2, result.stderr
    assert "read-only file system (write the report elsewhere with --out DIR)" in result.stderr
    out = run_dir.parent / "elsewhere"
    result = _report(read_only, env, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "report.md").exists() and (out / "summary.json").exists()
