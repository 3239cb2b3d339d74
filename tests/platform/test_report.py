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
from raystudy.platform.report import render, report


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
    scope="generated stand-in, CPU",
)


def _analyze(results, figures_dir: Path) -> Analysis:
    return Analysis(tables=[Table("Own table", ["x"], [[1]])], claims=[
        CLAIM, Claim("C helps", "clustered slope", "slope", math.nan, math.nan, math.nan, 2,
                     "inconclusive at this scale", scope="generated stand-in, CPU")])


def _study(analyze) -> Study:
    return Study(name="tiny", description="a tiny study", config_cls=TinyConfig,
                 train_loop=lambda config, ctx: None,
                 metrics=(Metric("eval/loss", "min"),), analyze=analyze, yaml_dir=Path("/none"))


def _run_dir(tmp_path: Path, name: str = "run", trial_id: str = "t0",
             overrides: dict | None = None, study: str = "tiny",
             params: dict | None = None) -> Path:
    run = tmp_path / name
    (run / "trial0").mkdir(parents=True)
    request = {"study": study, "kind": "sweep", "profile": "quick",
               "overrides": overrides or {}}
    if name != "run":  # a saved command line (older runs rebuild it from the request)
        request["argv"] = ["sweep", study, "--name", name]
    (run / "raystudy.json").write_text(json.dumps(request))
    trial = {"trial_id": trial_id, "config": {"lr": 0.1} if params is None else params,
             "status": "TERMINATED",
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
    assert "| claim | case | scope | effect [95 % CI] | n | p | verdict |" in section
    assert "|:---|:---|:---|:---|---:|---:|:---|" in section           # text left, numbers right
    assert "**Method A beats B \\| on every seed**" in section      # pipes escaped
    assert "Scope of every tested claim: generated stand-in, CPU" in section   # said once
    assert "| - |  | A - B: 0.25 [0.1, 0.4] | 6 | 0.03125 | ✔ supported |" in section
    assert "| · inconclusive at this scale |" in section
    assert "- _Method A beats B \\| on every seed -- note_: a one-line note" in section
    page = (run / "report.html").read_text()
    assert page.index("<h2>Claim</h2>") < page.index("<h3>Own table</h3>")
    assert "<span class='verdict v-supported'>supported</span>" in page
    assert "<span class='verdict v-inconclusive'>inconclusive at this scale</span>" in page


def test_a_claim_sentence_is_written_once_for_its_cases():
    from raystudy.platform.report import render
    a = dataclasses.replace(CLAIM, statement="L2-ER keeps up with reset (digits, l2)")
    b = dataclasses.replace(CLAIM, statement="L2-ER keeps up with reset (mnist, l2)",
                            verdict="contradicted", note="")
    groups = render.group_claims([a, b, dataclasses.replace(CLAIM, statement="Other")])
    assert [(g.sentence, g.cases) for g in groups] == [
        ("L2-ER keeps up with reset", ["digits, l2", "mnist, l2"]), ("Other", [""])]
    md = render.claims_markdown([a, b])
    rows = [line for line in md.splitlines() if line.startswith("| ")][1:]
    assert rows[0].startswith("| **L2-ER keeps up with reset** | digits, l2 |")
    assert rows[1].startswith("|  | mnist, l2 |") and "✘ contradicted" in rows[1]
    assert md.count(CLAIM.test) == 1                            # the shared test, once
    assert "(digits, l2) -- note_: a one-line note" in md       # a note of one case only


def test_preconditions_sit_under_their_row_and_not_run_rows_come_last():
    from raystudy import claims
    from raystudy.platform.report import render
    size = claims.Precondition("the test holds its size", False, "size 0.089")
    gated = dataclasses.replace(CLAIM, statement="Power beats the mean test (dirichlet)",
                                verdict="precondition failed", preconditions=(size,))
    cuda = claims.not_run("Power beats the mean test (CUDA)", "CUDA", "no GPU in this run")
    gpu = claims.not_run("Faster on GPU", "CUDA, batch 32", "no GPU in this run")
    md = render.claims_markdown([cuda, gpu, gated, CLAIM])
    rows = [line for line in md.splitlines() if line.startswith("| ")][1:]
    assert rows[0].startswith("| **Power beats the mean test** | dirichlet |  |")
    assert "⚠ precondition failed" in rows[0]
    assert rows[1] == "| | | | ↳ ✘ precondition: the test holds its size (size 0.089) | | | |"
    assert rows[2].startswith("|  | CUDA | CUDA |") and rows[2].endswith("○ not run |")
    assert rows[3].startswith("| **Method A beats B")     # tested groups before not-run ones
    assert rows[4].startswith("| **Faster on GPU** | - | CUDA, batch 32 |")
    page = render.claims_html([gated, cuda])
    assert "<span class='verdict v-precondition'>precondition failed</span>" in page
    assert "<tr class='precondition'><td></td><td></td><td colspan='5'>✘ precondition" in page
    assert "<span class='verdict v-not'>not run</span>" in page


def test_a_scope_or_precondition_every_row_shares_is_written_once():
    from raystudy import claims
    from raystudy.platform.report import render
    exact = claims.Precondition("the metric is exact", True, "gap 0.001")
    learned = claims.Precondition("the baseline learned", False, "loss 3.0")
    rows = [dataclasses.replace(CLAIM, statement=f"A beats B ({case})", preconditions=(
        exact, learned) if case != "c" else (exact,), verdict="precondition failed"
        if case != "c" else "supported") for case in "abc"]
    md = render.claims_markdown(rows)
    assert md.count("✔ precondition (every case): the metric is exact (gap 0.001)") == 1
    assert md.count("✘ precondition: the baseline learned (loss 3.0)") == 2   # a and b only
    lines = md.splitlines()
    assert lines[0] == "Scope of every tested claim: generated stand-in, CPU"
    assert lines[-1 - len([x for x in lines if x.startswith("- _")]) - 1].endswith(
        "(every case): the metric is exact (gap 0.001) | | | |")    # after the group's rows
    other = dataclasses.replace(CLAIM, statement="Other", scope="real data, GPU")
    mixed = render.claims_markdown([*rows, other])
    assert "Scope of every tested claim" not in mixed
    assert "| real data, GPU |" in mixed and mixed.count("| generated stand-in, CPU |") == 3
    page = render.claims_html(rows)
    assert "<p class='scope'>Scope of every tested claim: generated stand-in, CPU</p>" in page
    assert page.count("(every case): the metric is exact") == 1


def test_the_report_shows_the_command_the_config_and_every_trial(written):
    run = written()
    request = json.loads((run / "raystudy.json").read_text())
    assert report.command_line(request) == "raystudy sweep tiny --profile quick"
    request["argv"] = ["sweep", "tiny", "--set", "lr=0.2"]
    assert report.command_line(request) == "raystudy sweep tiny --set lr=0.2"
    md = (run / "report.md").read_text()
    assert "- **command**: `raystudy sweep tiny --profile quick`" in md
    assert "### Config" in md and "| **lr** | swept: 0.1 | 0.1 |" in md
    assert (run / "trials.csv").read_text().splitlines()[0] == "trial,lr,eval/loss,status"


def test_summary_json_holds_the_claims_and_the_hardware(written):
    summary = json.loads((written() / "summary.json").read_text())
    first = summary["claims"][0]
    assert first["statement"] == CLAIM.statement and first["verdict"] == "supported"
    assert first["ci_low"] == 0.1 and first["n"] == 6 and first["p_value"] == 0.03125
    assert summary["claims"][1]["p_value"] is None
    assert first["scope"] == "generated stand-in, CPU" and first["preconditions"] == []
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


def test_claims_table_is_one_row_per_claim_for_tools():
    table = report.claims_table([CLAIM])
    assert table.rows == [[CLAIM.statement, CLAIM.scope, CLAIM.test, "A - B: 0.25 [0.1, 0.4]",
                           6, 0.03125, "supported", "-", "a one-line note"]]


def _analyze_with_figure(results, figures_dir: Path) -> Analysis:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    fig.subplots().plot([0, 1], [1, 0])
    fig.savefig(figures_dir / "line.png")
    return Analysis(figures=[("A line", figures_dir / "line.png")],
                    claims=[CLAIM, dataclasses.replace(CLAIM, statement="C beats D (case 1)",
                                                       verdict="contradicted")])


def test_report_html_renders_in_a_real_browser(written, tmp_path):
    """Headless Chromium (Debian's, which `make test` installs) loads report.html with its
    figures and styled verdicts, and logs no console error."""
    import shutil

    pytest.importorskip("selenium", reason="selenium is in the test extra")
    browser, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not (browser and driver_path):
        pytest.skip("no chromium/chromedriver here (.ci/chromium.sh installs them as root)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    run = written(_analyze_with_figure)
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic",
                 f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    try:
        driver.get((run / "report.html").as_uri())
        assert driver.title == "tiny report"
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.getAttribute('src'), "
            "i.complete && i.naturalWidth > 0])")
        assert ["figures/line.png", True] in images
        assert all(loaded for _, loaded in images), images
        colours = driver.execute_script(
            "return Array.from(document.querySelectorAll('.verdict')).map("
            "e => [e.textContent, getComputedStyle(e).backgroundColor])")
        assert dict(colours) == {"supported": "rgb(215, 245, 221)",
                                 "contradicted": "rgb(250, 218, 218)"}
        errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        assert errors == []
    finally:
        driver.quit()


def test_a_markdown_cell_keeps_pipes_and_bracketed_effects_literal() -> None:
    assert render.escape_md("[a - b](T=1) | c") == "[a - b]\\(T=1) \\| c"


def test_docs_page_section_is_written_or_nothing_is(tmp_path, monkeypatch):
    """``--page`` to a missing file fails before anything is written (no figures folder
    beside it); to a page under docs/ the section lands between the markers, which name
    the command that regenerates it."""
    def with_figure(results, figures_dir: Path) -> Analysis:
        from matplotlib.figure import Figure

        fig = Figure()
        fig.subplots().plot([0, 1])
        fig.savefig(figures_dir / "curve.png")
        return dataclasses.replace(_analyze(results, figures_dir),
                                   figures=[("A curve", figures_dir / "curve.png")])

    monkeypatch.setattr(report, "get_study", lambda name: _study(with_figure))
    run = _run_dir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    with pytest.raises(report.UserError, match="no such file"):
        report.write_report(run, docs_page=docs / "tiny.md")
    assert not (docs / "figures").exists() and not (run / "report.md").exists()
    (docs / "tiny.md").write_text("# tiny\n\nHand-written text.\n")
    report.write_report(run, docs_page=docs / "tiny.md")
    text = (docs / "tiny.md").read_text()
    assert text.startswith("# tiny\n\nHand-written text.\n")
    assert "(written by `raystudy report RUN --page docs/tiny.md`" in text
    assert "![A curve](figures/tiny/curve.png)" in text
    assert (docs / "figures" / "tiny" / "curve.png").is_file()


def test_a_merged_report_reads_the_trials_of_several_runs_of_one_study(tmp_path, monkeypatch,
                                                                        capsys):
    """``--with``: each trial configured by its own run's overrides, every run's command
    recorded (header, summary.json, page), the wall times summed; it needs ``--out`` and
    one study, else one line and exit 2."""
    from raystudy.cli import main

    seen: dict[str, float] = {}

    def analyze(results, figures_dir: Path) -> Analysis:
        seen.update({t.trial_id: t.config["lr"] for t in results.trials})
        return _analyze(results, figures_dir)

    monkeypatch.setattr(report, "get_study", lambda name: _study(analyze))
    first = _run_dir(tmp_path, "claims")
    later = _run_dir(tmp_path, "later", trial_id="t9", overrides={"lr": 0.5}, params={})
    other = _run_dir(tmp_path, "other", study="another")
    for run, wall in ((first, 60.0), (later, 30.0)):
        (run / "summary.json").write_text(json.dumps({"wall_time_s": wall}))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tiny.md").write_text("# tiny\n")
    out = tmp_path / "merged"
    assert main(["report", str(first), "--with", str(later), "--out", str(out),
                 "--page", str(docs / "tiny.md")]) == 0
    assert seen == {"t0": 0.1, "t9": 0.5}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["wall_time_s"] == 90.0
    assert summary["counts"]["finished"] == 2
    assert [(m["run"], m["trials"]) for m in summary["merged"]] == [("later", 1)]
    md = (out / "report.md").read_text()
    assert "**with the trials of**: later (1 trials): raystudy sweep tiny --name later" in md
    page = (docs / "tiny.md").read_text()
    assert "- **run**: `claims`" in page and "wall time 1.5 min" in page
    assert "- **with the trials of**: `later` (1 trials, `raystudy sweep tiny --name " \
           "later`)" in page
    assert not (first / "report.md").exists()  # no one run's report was overwritten
    capsys.readouterr()
    for argv, message in (
            (["report", str(first), "--with", str(later)], "--out DIR"),
            (["report", str(first), "--with", str(other), "--out", str(tmp_path / "x")],
             "--with " + str(other) + " is a run of another, not of tiny")):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "x").exists()


def test_the_report_reads_the_config_the_run_recorded_then_its_first_report(tmp_path,
                                                                          monkeypatch):
    """A run's base config comes from raystudy.json's record; a run from before that record
    falls back to what its first report wrote into summary.json; only then the profile."""
    seen: dict[str, float] = {}

    def analyze(results, figures_dir: Path) -> Analysis:
        seen.update({t.trial_id: t.config["lr"] for t in results.trials})
        return _analyze(results, figures_dir)

    monkeypatch.setattr(report, "get_study", lambda name: _study(analyze))
    recorded = _run_dir(tmp_path, "recorded", trial_id="r", params={})
    request = json.loads((recorded / "raystudy.json").read_text())
    (recorded / "raystudy.json").write_text(json.dumps({**request, "config": {"lr": 0.3}}))
    older = _run_dir(tmp_path, "older", trial_id="o", params={})
    (older / "summary.json").write_text(json.dumps({"config": {"lr": 0.7}}))
    plain = _run_dir(tmp_path, "plain", trial_id="p", params={})
    for run in (recorded, older, plain):
        report.write_report(run)
    assert seen == {"r": 0.3, "o": 0.7, "p": 0.1}
    assert json.loads((older / "summary.json").read_text())["config"] == {"lr": 0.7}
