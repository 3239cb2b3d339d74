"""``raystudy compare RUN_A RUN_B ...``: runs of one study side by side, as one page.

Read from each run's ``summary.json`` (a run without one gets its report written first),
local or on object storage: the claims with each run's effect, interval, n and verdict
(a verdict that differs from the first run's is marked), the primary metric of every
configuration that more than one run has (its difference to the first run), and how the
runs differ: config keys, request (profile, space, overrides), versions and hardware.
The page is ``compare.md`` and ``compare.html`` in ``--out`` (default: a ``compare-*``
folder beside the first run). Runs of different studies are refused in one line.
"""

from __future__ import annotations

import html
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raystudy.contract import storage
from raystudy.errors import UserError
from raystudy.platform.report import render
from raystudy.platform.runs.rundir import read_summary, write_text_atomic

CHANGED = "⚠ changed"


def load_summaries(runs: list[str]) -> list[dict[str, Any]]:
    """Each run's summary (its report written first where there is none)."""
    from raystudy.platform.report.report import write_report_at

    if len(runs) < 2:
        raise UserError("raystudy compare needs at least two run folders")
    summaries = []
    for run in runs:
        if not storage.exists(storage.join(run, "raystudy.json")):
            raise UserError(f"{run} is not a raystudy run folder (no raystudy.json)")
        summary = read_summary(run)
        if summary is None:
            write_report_at(run)
            summary = read_summary(run)
        if summary is None:
            raise UserError(f"{run}: no readable summary.json (run `raystudy report {run}`)")
        summaries.append(summary)
    studies = {s["study"] for s in summaries}
    if len(studies) > 1:
        which = ", ".join(f"{run} is {summary['study']}"
                          for run, summary in zip(runs, summaries, strict=True))
        raise UserError(f"runs of different studies cannot be compared: {which}")
    return summaries


def _label(run: str) -> str:
    return storage.name(run) if storage.is_remote(run) else Path(run).name


def claim_rows(summaries: list[dict[str, Any]], labels: Sequence[str] = (),
               ) -> list[dict[str, Any]]:
    """Every claim statement in any run: per run its effect/interval/n/verdict (or None),
    and where the verdict changed, the preconditions whose outcome changed with it."""
    labels = list(labels) or [f"run {i + 1}" for i in range(len(summaries))]
    statements: dict[str, None] = {}
    for summary in summaries:
        statements.update(dict.fromkeys(c["statement"] for c in summary.get("claims", [])))
    rows = []
    for statement in statements:
        per_run = [next((c for c in s.get("claims", []) if c["statement"] == statement), None)
                   for s in summaries]
        verdicts = [c["verdict"] for c in per_run if c is not None]
        changed = len(set(verdicts)) > 1
        rows.append({"statement": statement, "runs": per_run, "changed": changed,
                     "because": _precondition_changes(per_run, labels) if changed else []})
    return rows


def _precondition_changes(per_run: list[dict[str, Any] | None], labels: list[str],
                          ) -> list[str]:
    """Why a verdict changed, where a precondition did: ``"<statement>: holds in A,
    fails in B"`` per precondition whose outcome differs between the runs that have it
    (summaries written before preconditions existed have none)."""
    outcomes: dict[str, list[str]] = {}
    for index, claim in enumerate(per_run):
        for pre in (claim or {}).get("preconditions") or []:
            outcomes.setdefault(pre["statement"], [""] * len(per_run))[index] = (
                "holds" if pre["holds"] else "fails")
    return [f"precondition {statement!r}: " + ", ".join(
                f"{o} in {labels[i]}" for i, o in enumerate(seen) if o)
            for statement, seen in outcomes.items() if len({o for o in seen if o}) > 1]


def _changed_text(row: dict[str, Any]) -> str:
    if not row["changed"]:
        return ""
    return CHANGED + (" because " + "; ".join(row["because"]) if row["because"] else "")


def _params_key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=str)


def metric_rows(summaries: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The primary metric per configuration (trial params) found in two or more runs."""
    name = summaries[0]["primary_metric"]["name"]
    by_params: dict[str, list[float | None]] = {}
    shown: dict[str, dict[str, Any]] = {}
    for index, summary in enumerate(summaries):
        for trial in summary.get("trials", []):
            key = _params_key(trial.get("params") or {})
            shown[key] = trial.get("params") or {}
            values = by_params.setdefault(key, [None] * len(summaries))
            value = (trial.get("metrics") or {}).get(name)
            if values[index] is None and isinstance(value, (int, float)):
                values[index] = float(value)
    rows = []
    for key, values in by_params.items():
        if sum(v is not None for v in values) < 2:
            continue
        first = values[0]
        rows.append({"params": shown[key], "values": values,
                     "differences": [None if v is None or first is None else v - first
                                     for v in values[1:]]})
    return name, rows


def differences(runs: list[str], summaries: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """(what, value per run) where the runs differ: config keys, request, versions, hardware."""
    out = []

    def collect(prefix: str, dicts: list[dict[str, Any]]) -> None:
        keys: dict[str, None] = {}
        for d in dicts:
            keys.update(dict.fromkeys(d))
        for key in keys:
            values = [d.get(key, "-") for d in dicts]
            if len({json.dumps(v, sort_keys=True, default=str) for v in values}) > 1:
                out.append((f"{prefix}{key}", [render.format_value(v) if not isinstance(
                    v, (list, dict)) else json.dumps(v, default=str) for v in values]))

    collect("config ", [s.get("config") or {} for s in summaries])
    collect("request ", [{k: s.get("request", {}).get(k) for k in
                          ("kind", "profile", "space", "overrides", "search", "scheduler",
                           "samples", "in_process")} for s in summaries])
    collect("version ", [s.get("versions") or {} for s in summaries])
    collect("hardware ", [{k: v for k, v in (s.get("hardware") or {}).items()}
                          for s in summaries])
    collect("", [{"wall time (s)": s.get("wall_time_s"), "written": s.get("written_at"),
                  "trials": sum((s.get("counts") or {}).values())} for s in summaries])
    return out


def _cell(claim: dict[str, Any] | None) -> str:
    if claim is None:
        return "-"
    mark = render.MARKS.get(claim["verdict"], "")
    return (f"{render.format_value(claim['effect_size'])} [{render.format_value(claim['ci_low'])}"
            f", {render.format_value(claim['ci_high'])}], n={claim['n']}: {mark} "
            f"{claim['verdict']}")


def _number(value: float | None) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else render.format_value(value)


def compare(runs: list[str], out_dir: str | None = None) -> Path:
    """Write compare.md and compare.html for ``runs``; returns the Markdown page's path."""
    summaries = load_summaries(runs)
    labels = [_label(r) for r in runs]
    if out_dir is None:
        first = runs[0]
        parent = Path(first).resolve().parent if not storage.is_remote(first) else Path.cwd()
        out = parent / f"compare-{time.strftime('%Y%m%d-%H%M%S')}"
    else:
        out = Path(out_dir)
    from raystudy.contract.data import check_writable

    check_writable(out, "--out")
    out.mkdir(parents=True, exist_ok=True)
    study = summaries[0]["study"]
    claims = claim_rows(summaries, labels)
    metric, metrics = metric_rows(summaries)
    diffs = differences(runs, summaries)

    md = [f"# {study}: {len(runs)} runs compared", ""]
    md += [f"- **{label}**: `{run}`" for label, run in zip(labels, runs, strict=True)] + [""]
    md += ["## Claims", ""]
    if claims:
        md += ["| claim | " + " | ".join(labels) + " | |",
               "|:---|" + ":---|" * len(labels) + ":---|"]
        md += [f"| {render.escape_md(r['statement'])} | "
               + " | ".join(render.escape_md(_cell(c)) for c in r["runs"])
               + f" | {render.escape_md(_changed_text(r))} |" for r in claims]
    else:
        md.append("No run tested a claim.")
    md += ["", f"## {metric} per configuration", ""]
    if metrics:
        head = [*labels, *(f"{lb} - {labels[0]}" for lb in labels[1:])]
        md += ["| configuration | " + " | ".join(head) + " |",
               "|:---|" + "---:|" * len(head)]
        md += [f"| {render.escape_md(_params_text(r['params']))} | "
               + " | ".join(_number(v) for v in [*r["values"], *r["differences"]]) + " |"
               for r in metrics]
    else:
        md.append("No configuration appears in more than one run.")
    md += ["", "## How the runs differ", ""]
    if diffs:
        md += ["| | " + " | ".join(labels) + " |", "|:---|" + ":---|" * len(labels)]
        md += [f"| {render.escape_md(what)} | "
               + " | ".join(render.escape_md(v) for v in values) + " |"
               for what, values in diffs]
    else:
        md.append("Nothing differs but the results.")
    write_text_atomic(out / "compare.md", "\n".join(md) + "\n")

    page = [f"<h1>{html.escape(study)}: {len(runs)} runs compared</h1><ul>"]
    page += [f"<li><b>{html.escape(lb)}</b>: <code>{html.escape(r)}</code></li>"
             for lb, r in zip(labels, runs, strict=True)]
    page.append("</ul><h2>Claims</h2>")
    if claims:
        page.append("<table class='claims'><tr><th>claim</th>"
                    + "".join(f"<th>{html.escape(lb)}</th>" for lb in labels) + "<th></th></tr>")
        for r in claims:
            cells = "".join(
                "<td>-</td>" if c is None else
                f"<td>{html.escape(_cell(c).rsplit(':', 1)[0])}: <span class='verdict "
                f"v-{c['verdict'].split()[0]}'>{html.escape(c['verdict'])}</span></td>"
                for c in r["runs"])
            page.append(f"<tr{' class=changed' if r['changed'] else ''}><td class='claim'>"
                        f"{html.escape(r['statement'])}</td>{cells}<td>"
                        f"{html.escape(_changed_text(r))}</td></tr>")
        page.append("</table>")
    else:
        page.append("<p>No run tested a claim.</p>")
    page.append(f"<h2>{html.escape(metric)} per configuration</h2>")
    if metrics:
        head = [*labels, *(f"{lb} - {labels[0]}" for lb in labels[1:])]
        page.append("<table><tr><th>configuration</th>"
                    + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>")
        page += [f"<tr><td>{html.escape(_params_text(r['params']))}</td>"
                 + "".join(f"<td class=num>{_number(v)}</td>"
                           for v in [*r["values"], *r["differences"]]) + "</tr>"
                 for r in metrics]
        page.append("</table>")
    else:
        page.append("<p>No configuration appears in more than one run.</p>")
    page.append("<h2>How the runs differ</h2>")
    if diffs:
        page.append("<table><tr><th></th>" + "".join(f"<th>{html.escape(lb)}</th>"
                                                     for lb in labels) + "</tr>")
        page += [f"<tr><td>{html.escape(what)}</td>"
                 + "".join(f"<td>{html.escape(v)}</td>" for v in values) + "</tr>"
                 for what, values in diffs]
        page.append("</table>")
    else:
        page.append("<p>Nothing differs but the results.</p>")
    write_text_atomic(out / "compare.html",
                      f"<!doctype html><html><head><meta charset='utf-8'><title>{study} "
                      f"compared</title><style>{render.CSS}</style></head><body>"
                      f"{''.join(page)}</body></html>\n")
    return out / "compare.md"


def _params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={render.format_value(v)}" for k, v in params.items()) or "(one run)"
