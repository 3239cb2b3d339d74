"""``raystudy report RUN_DIR``: summary.json, report.md, report.html and figures/*.png.

The generic part (the Claim section, request, trial counts, the trials table sorted by
the primary metric, diverged and failed trials, versions and hardware) is the same for
every study; the study's ``analyze`` hook supplies its ``Claim``s (rendered here in one
shape for every study, first) and adds its own tables and figures. A run on object storage
(``s3://...``) is downloaded to a temporary folder, reported there, and the report
uploaded back next to it (``write_report_at``).
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from raystudy.errors import UserError
from raystudy.platform import storage
from raystudy.platform.config import apply_overrides, load_config, to_flat_dict
from raystudy.platform.preflight import check_writable
from raystudy.platform.registry import get_study
from raystudy.platform.results import REQUEST_FILE, RunResults, TrialRecord, load_results
from raystudy.platform.rundir import write_json_atomic, write_text_atomic
from raystudy.platform.study import Analysis, Claim, Study, Table

STATUSES = ("finished", "diverged", "error", "unfinished")


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    import raystudy

    def installed(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "not installed"

    return {
        "raystudy": raystudy.__version__,
        "ray": installed("ray"),
        "torch": installed("torch"),
        "python": platform.python_version(),
    }


NUMERIC_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "amx_int8")
"""CPU flags that change which numeric kernels torch picks (and so the last bits)."""


def _cpuinfo(path: Path = Path("/proc/cpuinfo")) -> tuple[str, list[str]]:
    """CPU model name and the :data:`NUMERIC_FLAGS` it has, from /proc/cpuinfo."""
    model, flags = "", set()
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and not model:
                model = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return model, [f for f in NUMERIC_FLAGS if f in flags]


def _hardware() -> dict[str, Any]:
    """Where the report's numbers were computed: CPU model and flags, threads, GPU."""
    import os

    import torch

    model, flags = _cpuinfo()
    cuda = torch.cuda.is_available()
    return {
        "machine": platform.machine(),
        "cpu": model or platform.processor() or "unknown",
        "cpu_flags": flags,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "cuda": torch.version.cuda if cuda else None,
    }


def format_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.4g}"
    return str(value)


def trials_table(results: RunResults, study: Study) -> Table:
    """Every trial: its params, final study metrics and status, best first."""
    primary = study.primary
    keys = results.param_keys()
    names = [m.name for m in study.metrics]

    def sort_key(trial: TrialRecord) -> float:
        value = trial.metric(primary.name)
        if math.isnan(value):
            return math.inf
        return value if primary.mode == "min" else -value

    rows = [
        [t.trial_id, *(t.params.get(k) for k in keys), *(t.metric(n) for n in names), t.status]
        for t in sorted(results.trials, key=sort_key)
    ]
    return Table("Trials", ["trial", *keys, *names, "status"], rows,
                 note=f"sorted by {primary.name} ({primary.mode})")


NO_CLAIM = "This study's analysis tested no claim on this run."
CLAIM_COLUMNS = ["claim", "test", "effect [95 % CI]", "n", "p", "verdict"]


def _ci(claim: Claim) -> str:
    return (f"{claim.effect}: {format_value(claim.effect_size)} "
            f"[{format_value(claim.ci_low)}, {format_value(claim.ci_high)}]")


def claims_table(claims: list[Claim]) -> Table:
    """The Claim section: one row per claim, the same columns for every study.

    A note every row shares is written once above the table; rows with notes of their own
    get a "note" column, so that each note stays beside its claim.
    """
    rows = [[c.statement, c.test, _ci(c), c.n, "-" if c.p_value is None else c.p_value,
             c.verdict] for c in claims]
    distinct = list(dict.fromkeys(c.note for c in claims))
    if not claims:
        return Table("Claim", CLAIM_COLUMNS, rows,
                     note="this study's analysis tested no claim on this run")
    if len(distinct) == 1:
        return Table("Claim", CLAIM_COLUMNS, rows, note=distinct[0])
    return Table("Claim", [*CLAIM_COLUMNS, "note"],
                 [[*row, c.note or "-"] for row, c in zip(rows, claims, strict=True)])


def markdown_table(table: Table, level: int = 3) -> str:
    lines = [f"{'#' * level} {table.title}", ""]
    if table.note:
        lines += [f"_{table.note}_", ""]
    lines.append("| " + " | ".join(table.columns) + " |")
    lines.append("|" + "---|" * len(table.columns))
    for row in table.rows:
        lines.append("| " + " | ".join(format_value(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines) + "\n"


def html_table(table: Table, level: int = 3) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(format_value(v))}</td>" for v in row) + "</tr>"
        for row in table.rows
    )
    note = f"<p><em>{html.escape(table.note)}</em></p>" if table.note else ""
    title = f"<h{level}>{html.escape(table.title)}</h{level}>"
    return f"{title}{note}<table><tr>{head}</tr>{body}</table>"


_CSS = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
    "padding:3px 8px;text-align:right}th{background:#f3f3f3}img{max-width:100%}"
)


def _header(results: RunResults, study: Study, counts: dict[str, int]) -> list[tuple[str, str]]:
    request = results.request
    overrides = " ".join(f"{k}={v}" for k, v in (request.get("overrides") or {}).items())
    return [
        ("study", f"{study.name}: {study.description}"),
        ("command", request.get("kind", "")),
        ("profile", request.get("profile", "")),
        ("overrides", overrides or "none"),
        ("space", "none (one run)" if request.get("kind") == "run"
         else str(request.get("space") or "profile default")),
        ("search / scheduler", f"{request.get('search')} / {request.get('scheduler')}"),
        ("trials", ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])),
    ]


def attach_configs(results: RunResults, study: Study) -> dict[str, Any]:
    """Give each trial its full flat config (profile + overrides + the trial's params).

    Returns the run's base config (profile + overrides) as a flat dict.
    """
    request = results.request
    base = load_config(study.config_cls, study, request.get("profile", "quick"),
                       request.get("overrides") or {})
    for trial in results.trials:
        trial.config = to_flat_dict(apply_overrides(base, trial.params))
    return to_flat_dict(base)


def _error_file(trial: TrialRecord, run_dir: Path) -> str | None:
    """A failed trial's error file, relative to the run folder (None when it did not fail)."""
    if trial.status != "error" or trial.logdir is None:
        return None
    path = trial.logdir / "error.txt"
    try:
        return str(path.relative_to(run_dir))
    except ValueError:
        return str(path)


def _previous_wall_time(summary_path: Path) -> float | None:
    """The wall time a previous report recorded; a corrupt summary is simply rebuilt."""
    try:
        value = json.loads(summary_path.read_text()).get("wall_time_s")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, (int, float)) else None


def write_report_at(run: Path | str, wall_time_s: float | None = None,
                    out_dir: Path | str | None = None) -> Path | str:
    """``write_report`` for a local run folder or one on object storage; returns where
    report.md is (its URI when it was uploaded back).

    On object storage the run is downloaded to a temporary folder and reported there;
    without ``out_dir`` the report files are uploaded back into the run's folder.
    """
    if not storage.is_remote(run):
        return write_report(run, wall_time_s, out_dir)
    run = str(run)
    if not storage.exists(storage.join(run, REQUEST_FILE)):
        raise UserError(f"{run} is not a raystudy run folder (no {REQUEST_FILE})")
    with tempfile.TemporaryDirectory(prefix="raystudy-report-") as tmp:
        copy = storage.download(run, Path(tmp) / "run")
        if out_dir is not None:
            return write_report(copy, wall_time_s, out_dir, source=run)
        out = Path(tmp) / "report"
        write_report(copy, wall_time_s, out, source=run)
        storage.upload(out, run)
    return storage.join(run, "report.md")


def write_report(run_dir: Path | str, wall_time_s: float | None = None,
                 out_dir: Path | str | None = None, source: str | None = None) -> Path:
    """Build summary.json, report.md, report.html and figures/ for a run folder.

    ``out_dir`` (default: the run folder) is where they go, e.g. for a read-only copy;
    ``source`` is how the report names the run (its URI when ``run_dir`` is a copy).
    """
    run_dir = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir
    results = load_results(run_dir)
    check_writable(out, "report folder", need_bytes=1024**2,
                   hint="" if out_dir else " (write the report elsewhere with --out DIR)")
    study = get_study(results.request["study"])
    base_config = attach_configs(results, study)
    if wall_time_s is None:
        wall_time_s = _previous_wall_time(run_dir / "summary.json")
    out.mkdir(parents=True, exist_ok=True)
    figures_dir = out / "figures"
    figures_dir.mkdir(exist_ok=True)
    analysis = study.analyze(results, figures_dir) if study.analyze else Analysis()
    counts = {s: len(results.by_status(s)) for s in STATUSES}

    tables = [*analysis.tables, trials_table(results, study)]
    problems = [t for t in results.trials if t.status in ("diverged", "error")]
    if problems:
        tables.append(Table(
            "Diverged and failed trials", ["trial", "status", "params", "error"],
            [[t.trial_id, t.status, json.dumps(t.params), t.error or ""] for t in problems],
        ))
    summary = {
        "study": study.name,
        "request": results.request,
        "config": base_config,
        "counts": counts,
        "primary_metric": {"name": study.primary.name, "mode": study.primary.mode},
        "trials": [
            {"trial_id": t.trial_id, "params": t.params, "status": t.status, "error": t.error,
             "error_file": _error_file(t, run_dir),
             "metrics": {m.name: t.metric(m.name) for m in study.metrics}}
            for t in results.trials
        ],
        "diverged": [t.trial_id for t in results.by_status("diverged")],
        "errors": {t.trial_id: t.error for t in results.by_status("error")},
        "claims": [dataclasses.asdict(c) for c in analysis.claims],
        "analysis": analysis.summary,
        "versions": _versions(),
        "hardware": _hardware(),
        "wall_time_s": wall_time_s,
        "written_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    write_json_atomic(out / "summary.json", summary)

    header = _header(results, study, counts)
    if wall_time_s is not None:
        header.append(("wall time", f"{wall_time_s:.1f} s"))
    figures = [(title, path.relative_to(out)) for title, path in analysis.figures]
    md = [f"# {study.name} report", ""]
    md += [f"- **{k}**: {v}" for k, v in header] + [""]
    md.append(markdown_table(claims_table(analysis.claims), level=2) if analysis.claims
              else f"## Claim\n\n{NO_CLAIM}\n")
    md += [f"> {note}\n" for note in analysis.notes]
    md += [f"![{title}]({path})\n" for title, path in figures]
    md += [markdown_table(t) for t in tables]
    md.append(f"TensorBoard: `tensorboard --logdir {source or run_dir}`\n")
    write_text_atomic(out / "report.md", "\n".join(md))

    page = [f"<h1>{html.escape(study.name)} report</h1><ul>"]
    page += [f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in header]
    page.append("</ul>")
    page.append(html_table(claims_table(analysis.claims), level=2) if analysis.claims
                else f"<h2>Claim</h2><p>{NO_CLAIM}</p>")
    page += [f"<blockquote>{html.escape(n)}</blockquote>" for n in analysis.notes]
    page += [f"<figure><img src='{p}' alt='{html.escape(t)}'><figcaption>{html.escape(t)}"
             "</figcaption></figure>" for t, p in figures]
    page += [html_table(t) for t in tables]
    write_text_atomic(out / "report.html",
        f"<!doctype html><html><head><meta charset='utf-8'><title>{study.name}</title>"
        f"<style>{_CSS}</style></head><body>{''.join(page)}</body></html>\n"
    )
    return out / "report.md"
