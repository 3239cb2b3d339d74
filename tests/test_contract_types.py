"""The type checker `make lint` runs holds a study to the contract: a misspelt report
argument and a context that lacks members are errors, a conforming context is not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BROKEN = '''
from raystudy import TrialContext
from raystudy.contract.context import LocalContext


def loop(ctx: TrialContext) -> None:
    ctx.report({"eval/loss": 1.0}, stepp=3)


class HalfAContext:
    rank = 0

    def report(self, metrics: dict) -> None: ...


def use(ctx: TrialContext) -> None: ...


use(HalfAContext())
use(LocalContext())
'''


def test_mypy_with_the_projects_settings_finds_contract_violations(tmp_path):
    study = tmp_path / "broken_study.py"
    study.write_text(BROKEN)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "cache"), str(study)],
        capture_output=True, text=True, cwd=ROOT)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(errors) == 2, errors
    assert 'Unexpected keyword argument "stepp" for "report" of "TrialContext"' in errors[0]
    assert 'incompatible type "HalfAContext"; expected "TrialContext"' in errors[1]
