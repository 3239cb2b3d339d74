"""CLI contract: list, and user errors as one line with exit code 2 (no Ray started)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from raystudy.cli import main


def test_list_shows_every_study(capsys):
    assert main(["list"]) == 0
    assert "optimizer_robustness" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["run", "nosuchstudy"], "unknown study 'nosuchstudy'; available studies:"),
        (["run", "optimizer_robustness", "--set", "optimizer.lrate=1"],
         "unknown config key 'optimizer.lrate'"),
        (["run", "optimizer_robustness", "--set", "optimizer.lr=-1"],
         "optimizer.lr=-1.0 must be > 0"),
        (["run", "optimizer_robustness", "--set", "optimizer.lr=abc"], "is not a number"),
        (["run", "optimizer_robustness", "--profile", "huge"], "unknown profile 'huge'"),
        (["sweep", "optimizer_robustness", "--space", "nope"], "unknown space 'nope'"),
        (["sweep", "optimizer_robustness", "--search", "bayes"], "unknown --search 'bayes'"),
        (["sweep", "optimizer_robustness", "--resume", "--storage", "/nonexistent-rs"],
         "no unfinished optimizer_robustness run"),
        (["report", "/nonexistent-run"], "is not a raystudy run folder"),
        (["data", "make-tokens", "/tmp/x", "--source", "/nonexistent-text"],
         "text source folder not found"),
    ],
)
def test_user_errors_are_one_line_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_console_script_exit_code_in_a_subprocess():
    proc = subprocess.run([sys.executable, "-m", "raystudy", "run", "nosuchstudy"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "raystudy: error: unknown study 'nosuchstudy'; available studies: "
        + proc.stderr.split("available studies: ")[1].strip()
    ]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["run", "optimizer_robustness", "--set", "data.source=tokens",
          "--set", "data.path=/nonexistent-tokens"],
         "data.path /nonexistent-tokens/train.npy: no such file"),
        (["run", "optimizer_robustness", "--set", "data.source=/nonexistent-text"],
         "data.source /nonexistent-text: no such folder"),
        (["sweep", "cell_classifier", "--set", "data.path=/nonexistent-cells"],
         "data.path=/nonexistent-cells: no such file or folder"),
    ],
)
def test_missing_local_data_is_one_line_exit_2_before_ray_starts(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "counts,code",
    [({"finished": 1, "error": 2}, 1), ({"diverged": 1, "error": 1}, 1), ({"error": 3}, 1),
     ({"finished": 2}, 0), ({"finished": 1, "diverged": 2}, 0)],
)
def test_exit_code_is_1_when_any_trial_errored(tmp_path, counts, code, capsys):
    """A diverged trial is a result; an errored one fails the command, its file named."""
    import json

    from raystudy.cli import _exit_code

    trials = [{"trial_id": f"t{i}", "status": "error", "error_file": f"t{i}/error.txt"}
              for i in range(counts.get("error", 0))]
    (tmp_path / "summary.json").write_text(json.dumps({"counts": counts, "trials": trials}))
    assert _exit_code(tmp_path) == code
    err = capsys.readouterr().err
    if code:
        total = sum(counts.values())
        assert err == (f"raystudy: {counts['error']} of {total} trial(s) failed; errors in "
                       + ", ".join(str(tmp_path / f"t{i}" / "error.txt")
                                   for i in range(counts["error"])) + "\n")
    else:
        assert err == ""


def test_the_guides_data_command_runs_through_the_cli(tmp_path, capsys, monkeypatch):
    """The 'A data command' snippet of docs/writing-a-study.md, contributed by a study of
    this process, is a `raystudy data` command with its own flags and one-line errors."""
    from pathlib import Path

    import numpy as np

    from raystudy.platform.configuration import registry
    guide = (Path(__file__).parents[1] / "docs" / "writing-a-study.md").read_text()
    snippet = guide.split("## A data command")[1].split("```python\n")[1].split("```")[0]
    module = tmp_path / "guide_data.py"
    module.write_text(snippet)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.add_entry(registry.StudyEntry("guide", "guide_data:STUDY"))
    try:
        assert main(["data", "make-problems", str(tmp_path / "out"), "--rows", "7"]) == 0
        assert capsys.readouterr().out == f"raystudy: wrote {tmp_path / 'out'}/problems.npy\n"
        assert np.load(tmp_path / "out" / "problems.npy").shape == (7, 10)
        with pytest.raises(SystemExit) as exit_info:
            main(["data", "make-problems", str(tmp_path / "out"), "--rows", "0"])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.startswith("raystudy: error: argument --rows: 0 must")
    finally:
        registry.remove_entry("guide")
