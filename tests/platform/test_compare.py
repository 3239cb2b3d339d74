"""``raystudy compare``: two runs' claims, metrics and differences on one page."""

from __future__ import annotations

import json

from raystudy.cli import main


def _claim(verdict, effect=0.2, low=0.1, high=0.3, n=8, size_holds=None):
    claim = {"statement": "A beats B", "test": "paired", "effect": "A - B",
             "effect_size": effect, "ci_low": low, "ci_high": high, "n": n,
             "verdict": verdict, "p_value": 0.01, "note": ""}
    if size_holds is not None:
        claim["preconditions"] = [{"statement": "the test holds its size",
                                   "holds": size_holds, "evidence": "size 0.05"}]
    return claim


def _run(tmp_path, name, study, verdict, loss, lr_default, cpu, size_holds=None):
    run = tmp_path / name
    run.mkdir()
    (run / "raystudy.json").write_text(json.dumps({"study": study, "kind": "sweep"}))
    summary = {
        "study": study, "request": {"kind": "sweep", "profile": "quick", "space": "claim"},
        "config": {"optimizer.lr": lr_default, "train.steps": 100},
        "counts": {"finished": 2}, "primary_metric": {"name": "eval/loss", "mode": "min"},
        "trials": [{"trial_id": "1", "params": {"seed": 0}, "status": "finished",
                    "metrics": {"eval/loss": loss}},
                   {"trial_id": "2", "params": {"seed": 1}, "status": "finished",
                    "metrics": {"eval/loss": 2 * loss}}],
        "claims": [_claim(verdict, size_holds=size_holds)], "versions": {"raystudy": "0.1.0"},
        "hardware": {"cpu": cpu}, "wall_time_s": 10.0, "written_at": "2026-12-02 10:00:00"}
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def test_two_runs_side_by_side_with_the_changed_verdict_marked(tmp_path, capsys):
    laptop = _run(tmp_path, "laptop", "s", "supported", 1.0, 0.01, "EPYC")
    cluster = _run(tmp_path, "cluster", "s", "inconclusive at this scale", 1.5, 0.01, "Xeon")
    out = tmp_path / "cmp"
    assert main(["compare", str(laptop), f"file://{cluster}", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip().endswith(f"{out / 'compare.md'} (and compare.html)")
    page = (out / "compare.md").read_text()
    claim_row = next(line for line in page.splitlines() if line.startswith("| A beats B"))
    assert "0.2 [0.1, 0.3], n=8: ✔ supported" in claim_row
    assert "· inconclusive at this scale" in claim_row and "⚠ changed" in claim_row
    assert "| seed=0 | 1 | 1.5 | 0.5 |" in page and "| seed=1 | 2 | 3 | 1 |" in page
    assert "| hardware cpu | EPYC | Xeon |" in page
    assert "config optimizer.lr" not in page                   # equal keys are not listed
    html = (out / "compare.html").read_text()
    assert "<tr class=changed><td class='claim'>A beats B</td>" in html


def test_runs_of_different_studies_are_refused_in_one_line(tmp_path, capsys):
    a = _run(tmp_path, "a", "s", "supported", 1.0, 0.01, "x")
    b = _run(tmp_path, "b", "t", "supported", 1.0, 0.01, "x")
    assert main(["compare", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert err == (f"raystudy: error: runs of different studies cannot be compared: {a} is s, "
                   f"{b} is t\n")
    assert main(["compare", str(a)]) == 2
    assert "at least two run folders" in capsys.readouterr().err


def test_a_verdict_changed_by_a_precondition_says_which(tmp_path):
    laptop = _run(tmp_path, "laptop", "s", "supported", 1.0, 0.01, "EPYC", size_holds=True)
    cluster = _run(tmp_path, "cluster", "s", "precondition failed", 1.0, 0.01, "EPYC",
                   size_holds=False)
    out = tmp_path / "cmp"
    assert main(["compare", str(laptop), str(cluster), "--out", str(out)]) == 0
    page = (out / "compare.md").read_text()
    claim_row = next(line for line in page.splitlines() if line.startswith("| A beats B"))
    assert "⚠ precondition failed" in claim_row
    assert ("⚠ changed because precondition 'the test holds its size': holds in laptop, "
            "fails in cluster") in claim_row
    assert "because precondition" in (out / "compare.html").read_text()
