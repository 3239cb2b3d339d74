"""The report opens with the Claim section and records claims and hardware in summary.json.

No Ray: a run folder is written by hand (request, Tune's experiment state, one trial's
result.json) and the study is a tiny one defined here.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from raystudy import Analysis, Claim, Metric, Study, Table
from raystudy.platform import report


@dataclass
class TinyConfig:
    lr: float = 0.1


CLAIM = Claim(
    statement="Method A beats B | on every seed",
    test="paired over 6 seeds: sign-flip permutation test (exact)",
    effect="A - B",
    effect_size=0.25,
    ci_low=0.1,
    ci_high=0.4,
    n=6,
    verdict="supported",
    p_value=0.03125,
    note="a one-line note",
)


def _analyze(results, figures_dir: Path) -> Analysis:
    return Analysis(tables=[Table("Own table", ["x"], [[1]])], claims=[
        CLAIM, Claim("C helps", "clustered slope", "slope", math.nan, math.nan, math.nan, 2,
                     "inconclusive at this scale")])


def _study(analyze) -> Study:
    return Study(name="tiny", description="a tiny study", config_cls=TinyConfig,
                 train_loop=lambda config, ctx: None,
                 metrics=(Metric("eval/loss", "min"),), analyze=analyze, yaml_dir=Path("/none"))


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "trial0").mkdir(parents=True)
    (run / "raystudy.json").write_text(json.dumps(
        {"study": "tiny", "kind": "sweep", "profile": "quick", "overrides": {}}))
    trial = {"trial_id": "t0", "config": {"lr": 0.1}, "status": "TERMINATED",
             "relative_logdir": "trial0"}
    (run / "experiment_state-2026.json").write_text(json.dumps({"trial_data": [
        [json.dumps(trial), json.dumps({})]]}))
    (run / "trial0" / "result.json").write_text(json.dumps({"eval/loss": 1.5}) + "\n")
    return run


@pytest.fixture
def written(tmp_path, monkeypatch):
    def write(analyze=_analyze):
        monkeypatch.setattr(report, "get_study", lambda name: _study(analyze))
        run = _run_dir(tmp_path)
        report.write_report(run)
        return run
    return write


def test_claim_section_comes_first_in_markdown_and_html(written):
    run = written()
    md = (run / "report.md").read_text()
    assert md.index("## Claim") < md.index("### Own table") < md.index("### Trials")
    section = md[md.index("## Claim"):md.index("### Own table")]
    assert "| claim | test | effect [95 % CI] | n | p | verdict | note |" in section
    assert "Method A beats B \\| on every seed" in section       # pipes escaped
    assert "A - B: 0.25 [0.1, 0.4] | 6 | 0.03125 | supported |" in section
    assert "| supported | a one-line note |" in section            # each note by its claim
    assert "| inconclusive at this scale | - |" in section
    page = (run / "report.html").read_text()
    assert page.index("<h2>Claim</h2>") < page.index("<h3>Own table</h3>")
    assert "<td>supported</td>" in page


def test_summary_json_holds_the_claims_and_the_hardware(written):
    summary = json.loads((written() / "summary.json").read_text())
    first = summary["claims"][0]
    assert first["statement"] == CLAIM.statement and first["verdict"] == "supported"
    assert first["ci_low"] == 0.1 and first["n"] == 6 and first["p_value"] == 0.03125
    assert summary["claims"][1]["p_value"] is None
    hardware = summary["hardware"]
    assert hardware["cpu"] and hardware["torch_threads"] >= 1
    assert set(hardware["cpu_flags"]) <= set(report.NUMERIC_FLAGS)
    assert hardware["device"] == "cpu" or hardware["cuda"]


def test_a_study_without_claims_still_gets_the_section(written):
    run = written(lambda results, figures_dir: Analysis())
    md = (run / "report.md").read_text()
    assert "## Claim" in md and "tested no claim" in md and "| claim |" not in md
    assert json.loads((run / "summary.json").read_text())["claims"] == []


def test_cpuinfo_reads_model_and_numeric_flags(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\nmodel name\t: Some CPU @ 2GHz\n"
                    "flags\t\t: fpu sse avx2 avx512f amx_tile\n\nprocessor\t: 1\n")
    assert report._cpuinfo(path) == ("Some CPU @ 2GHz", ["avx2", "avx512f", "amx_tile"])
    assert report._cpuinfo(tmp_path / "missing") == ("", [])


def test_claim_notes_stay_beside_their_claims():
    twin = dataclasses.replace(CLAIM, statement="Method A beats C")
    shared = report.claims_table([CLAIM, twin])
    assert shared.note == "a one-line note" and shared.columns[-1] == "verdict"
    other = dataclasses.replace(CLAIM, statement="Method A beats D", note="")
    own = report.claims_table([CLAIM, other])
    assert own.columns[-1] == "note" and not own.note
    assert [row[-1] for row in own.rows] == ["a one-line note", "-"]
