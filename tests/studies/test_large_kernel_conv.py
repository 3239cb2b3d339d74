"""The large_kernel_conv study: config errors, one in-process block, a shrunk quick sweep
through the CLI and its report (no timing assertions: the machine is shared)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from raystudy.cli import main
from raystudy.platform.show import field_docs
from raystudy.studies.large_kernel_conv.recipe import LargeKernelConfig, shape_of

STUDY_DIR = Path(__file__).parents[2] / "raystudy" / "studies" / "large_kernel_conv"
RAYSTUDY = [sys.executable, "-m", "raystudy"]
SMALL = ["--set", "timing.windows=4,14", "--set", "timing.kernels=3,5,9", "--set",
         "timing.reps=2"]


def test_shape_and_validation():
    c = LargeKernelConfig(shape="2x16x8")
    assert shape_of(c) == (2, 16, 8, 8)
    c.validate()
    with pytest.raises(ValueError, match="BxCxS"):
        LargeKernelConfig(shape="2x16").validate()
    c = LargeKernelConfig()
    c.timing.kernels = (3, 7)
    with pytest.raises(ValueError, match="needs 5"):
        c.validate()


def test_every_config_key_is_documented():
    docs = field_docs(LargeKernelConfig)
    assert "timing.check_tolerance" in docs
    assert not [k for k, v in docs.items() if not v.strip()], docs


def test_quick_profile_override_example_runs(tmp_path: Path):
    """The override example in quick.yaml's header is a command that works."""
    header = (STUDY_DIR / "profiles" / "quick.yaml").read_text().splitlines()
    line = next(x for x in header if "Override example:" in x)
    words = line.split("Override example:")[1].split()
    assert words[:3] == ["raystudy", "run", "large_kernel_conv"], words
    sets = [w for i, w in enumerate(words) if i and words[i - 1] == "--set"]
    assert sets, line
    assert main([*words[1:], "--storage", str(tmp_path), *SMALL]) == 0


def test_bad_config_exits_2(tmp_path: Path):
    out = subprocess.run([*RAYSTUDY, "run", "large_kernel_conv", "--in-process", "--storage",
                          str(tmp_path), "--set", "shape=2x16"], capture_output=True,
                         text=True)
    assert out.returncode == 2, out.stderr
    assert "BxCxS" in out.stderr


@pytest.mark.ray
def test_quick_sweep_and_report(tmp_path: Path, ray_session):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  shape: {grid: [1x8x8, 1x8x16]}\n  timing.phase: {grid: "
                     "[fwd, train]}\n  timing.block: {grid: [0, 1, 2]}\n")
    assert main(["sweep", "large_kernel_conv", "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path / "runs"), "--name", "q", *SMALL]) == 0
    summary = json.loads((tmp_path / "runs" / "q" / "summary.json").read_text())
    assert summary["counts"]["finished"] == 12, summary["counts"]
    report = (tmp_path / "runs" / "q" / "report.md").read_text()
    assert "faster than dw5" in report and "time falls with the window" in report
    assert "iGEMM" in report  # the LKA claim is missing, with why
