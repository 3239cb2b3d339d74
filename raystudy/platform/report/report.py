"""``raystudy report RUN_DIR``: summary.json, report.md, report.html and figures/*.png.

The generic part (the Claim section, request, trial counts, the trials table sorted by
the primary metric, diverged and failed trials, versions and hardware) is the same for
every study; the study's ``analyze`` hook supplies its ``Claim``s (rendered here in one
shape for every study, first) and adds its own tables and figures. A run on object storage
(``s3://...``) is downloaded to a temporary folder, reported there, and the report
uploaded back next to it (``write_report_at``). ``--with RUN2 ...`` reads the trials of
several runs of one study as one (seeds or an arm added later, a selection run beside the
claims it fixes) into a report of its own (``--out``); every run's command is recorded.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import platform
import shlex
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raystudy.contract import storage
from raystudy.contract.data import check_writable
from raystudy.contract.results import RunResults, TrialRecord
from raystudy.contract.study import Analysis, Claim, Study, Table
from raystudy.errors import UserError
from raystudy.platform.configuration.config import (
    apply_overrides,
    config_from_record,
    load_config,
    to_flat_dict,
)
from raystudy.platform.configuration.registry import get_study
from raystudy.platform.report import render
from raystudy.platform.runs.results import REQUEST_FILE, load_results
from raystudy.platform.runs.rundir import write_json_atomic, write_text_atomic

format_value = render.format_value

STATUSES = ("finished", "diverged", "error", "unfinished")


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    from raystudy._version import __version__

    def installed(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "not installed"

    return {
        "raystudy": __version__,
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
TRIALS_SHOWN = 50
"""Rows of the report's trials table (best first); every trial is in trials.csv."""
CURVES_MAX_TRIALS = 300
"""Sweeps up to this many trials get the per-trial curves of the primary metric."""


def claims_table(claims: list[Claim]) -> Table:
    """The claims as a plain table (one row per claim): the report's Markdown and HTML
    group them by sentence (``render.claims_markdown``); this is for tools and docs."""
    return Table("Claim", ["claim", "scope", "test", "effect [95 % CI]", "n", "p", "verdict",
                           "preconditions", "note"],
                 [[c.statement, c.scope, c.test, render.effect_text(c), c.n,
                   "-" if c.p_value is None else c.p_value, c.verdict,
                   "; ".join(render.precondition_lines(c)) or "-", c.note or "-"]
                  for c in claims])


def command_line(request: dict[str, Any]) -> str:
    """The command as typed (runs before the command line was saved: rebuilt from it)."""
    argv = request.get("argv")
    if argv:
        return "raystudy " + shlex.join(argv)
    words = ["raystudy", request.get("kind", "run"), request.get("study", "")]
    words += ["--profile", request.get("profile", "quick")]
    if request.get("space"):
        words += ["--space", request["space"]]
    for key, value in (request.get("overrides") or {}).items():
        words += ["--set", f"{key}={value}"]
    return shlex.join(words)


def _header(results: RunResults, study: Study, counts: dict[str, int],
            hardware: dict[str, Any], versions: dict[str, str]) -> list[tuple[str, str]]:
    request = results.request
    overrides = " ".join(f"{k}={v}" for k, v in (request.get("overrides") or {}).items())
    gpu = f", {hardware['device']}" if hardware.get("device") not in (None, "cpu") else ""
    return [
        ("study", f"{study.name}: {study.description}"),
        ("command", command_line(request)),
        ("profile", request.get("profile", "")),
        ("overrides", overrides or "none"),
        ("space", "none (one run)" if request.get("kind") == "run"
         else str(request.get("space") or "profile default")),
        ("search / scheduler", f"{request.get('search')} / {request.get('scheduler')}"
         + (" (in this process, no Ray)" if request.get("in_process") else "")),
        ("trials", ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]) or "none"),
        ("hardware", f"{hardware['cpu']} ({hardware['cpu_count']} CPUs){gpu}"),
        ("versions", ", ".join(f"{k} {v}" for k, v in versions.items())),
    ]


def attach_configs(results: RunResults, study: Study) -> dict[str, Any]:
    """Give each trial its full flat config (profile + overrides + the trial's params).

    Returns the run's base config (profile + overrides) as a flat dict: the one the run
    recorded when it started; for a run from before that record, the one its first report
    wrote (``summary.json``), else the profile as it reads now.
    """
    request = results.request
    recorded = request.get("config") or _reported_config(results.run_dir)
    base = (config_from_record(study.config_cls, recorded) if recorded else
            load_config(study.config_cls, study, request.get("profile", "quick"),
                        request.get("overrides") or {}))
    for trial in results.trials:
        trial.config = to_flat_dict(apply_overrides(base, trial.params))
    return to_flat_dict(base)


def merged_results(run_dirs: list[Path], names: list[str]
                   ) -> tuple[RunResults, Study, dict[str, Any], list[RunResults]]:
    """The trials of several runs of one study as one ``RunResults`` (the first run's
    request), each trial configured by its own run's profile and overrides; returns it,
    the study, the first run's base config and each run's own results."""
    parts = [load_results(run_dir) for run_dir in run_dirs]
    study = get_study(parts[0].request["study"])
    for name, part in zip(names[1:], parts[1:], strict=True):
        if part.request["study"] != study.name:
            raise UserError(f"--with {name} is a run of {part.request['study']}, not of "
                            f"{study.name}: a merged report reads one study's runs")
    bases = [attach_configs(part, study) for part in parts]
    trials = [t for part in parts for t in part.trials]
    merged = RunResults(run_dir=parts[0].run_dir, request=parts[0].request, trials=trials)
    return merged, study, bases[0], parts


def _reported_config(run_dir: Path | None) -> dict[str, Any]:
    """The base config an earlier report of the run wrote ({} if none): what the profile
    was when a run from before the recorded config was reported."""
    config = _previous_summary(run_dir).get("config")
    return config if isinstance(config, dict) else {}


def _swept_values(results: RunResults) -> dict[str, list[Any]]:
    """Each swept key's distinct values over the run's trials, sorted where they sort."""
    values: dict[str, list[Any]] = {}
    for trial in results.trials:
        for key, value in trial.params.items():
            if value not in values.setdefault(key, []):
                values[key].append(value)
    for key, found in values.items():
        try:
            values[key] = sorted(found)
        except TypeError:
            pass
    return values


def write_trials_csv(path: Path, table: Table) -> None:
    """Every trial of the trials table, as CSV beside the report."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(table.columns)
    writer.writerows(table.rows)
    write_text_atomic(path, buffer.getvalue())


def curves_figure(results: RunResults, study: Study, figures_dir: Path) -> Path | None:
    """The primary metric of each trial over its reports (up to ``CURVES_MAX_TRIALS``
    trials, when some trial reported it at least twice), the best trial drawn bold."""
    name = study.primary.name
    series = []
    for trial in results.trials:
        points = [(row.get("progress/step", row.get("training_iteration", i + 1)), row[name])
                  for i, row in enumerate(trial.history)
                  if isinstance(row.get(name), (int, float)) and math.isfinite(row[name])]
        if points:
            series.append((trial, points))
    if not series or len(series) > CURVES_MAX_TRIALS or max(len(p) for _, p in series) < 2:
        return None
    from matplotlib.figure import Figure

    def final(item: tuple[TrialRecord, list]) -> float:
        value = item[1][-1][1]
        return value if study.primary.mode == "min" else -value

    best = min(series, key=final)[0]
    fig = Figure(figsize=(6.5, 3.6))
    ax = fig.subplots()
    for trial, points in series:
        xs, ys = zip(*points, strict=True)
        bold = trial is best
        ax.plot(xs, ys, color="C3" if bold else "C0", lw=2 if bold else 0.8,
                alpha=1 if bold else max(0.15, min(0.8, 8 / len(series))),
                label=f"best: {_short_params(trial.params) or trial.trial_id}" if bold else None,
                zorder=3 if bold else 2)
    values = [y for _, points in series for _, y in points]
    if min(values) > 0 and max(values) / min(values) > 100:
        ax.set_yscale("log")
    ax.set(xlabel="step" if any("progress/step" in r for t, _ in series for r in t.history)
           else "report", ylabel=name, title=f"{name} per trial ({len(series)} trials)")
    ax.legend(loc="best", fontsize=8)
    path = figures_dir / "trials_over_steps.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def _short_params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={format_value(v)}" for k, v in params.items())


def _error_file(trial: TrialRecord, run_dir: Path) -> str | None:
    """A failed trial's error file, relative to the run folder (None when it did not fail)."""
    if trial.status != "error" or trial.logdir is None:
        return None
    path = trial.logdir / "error.txt"
    try:
        return str(path.relative_to(run_dir))
    except ValueError:
        return str(path)


def _previous_summary(run_dir: Path | None) -> dict[str, Any]:
    """The summary.json an earlier report of the run wrote ({} if none, or corrupt: it is
    simply rebuilt)."""
    if run_dir is None:
        return {}
    try:
        summary = json.loads((Path(run_dir) / "summary.json").read_text())
    except (OSError, ValueError):
        return {}
    return summary if isinstance(summary, dict) else {}


def _previous_wall_time(run_dir: Path) -> float | None:
    """The wall time a previous report recorded."""
    value = _previous_summary(run_dir).get("wall_time_s")
    return value if isinstance(value, (int, float)) else None


def write_report_at(run: Path | str, wall_time_s: float | None = None,
                    out_dir: Path | str | None = None,
                    docs_page: Path | str | None = None,
                    with_runs: Sequence[Path | str] = ()) -> Path | str:
    """``write_report`` for a local run folder or one on object storage; returns where
    report.md is (its URI when it was uploaded back).

    A run on object storage is downloaded to a temporary folder and reported there;
    without ``out_dir`` the report files are uploaded back into the run's folder.
    ``with_runs`` (a merged report, local or on object storage) needs ``out_dir``.
    """
    if with_runs and out_dir is None:
        raise UserError("--with: name the merged report's folder with --out DIR (it is no "
                        "one run's report)")
    if not storage.is_remote(run) and not any(storage.is_remote(r) for r in with_runs):
        return write_report(run, wall_time_s, out_dir, docs_page=docs_page,
                            with_runs=with_runs)
    for remote in [r for r in (run, *with_runs) if storage.is_remote(r)]:
        if not storage.exists(storage.join(str(remote), REQUEST_FILE)):
            raise UserError(f"{remote} is not a raystudy run folder (no {REQUEST_FILE})")
    with tempfile.TemporaryDirectory(prefix="raystudy-report-") as tmp:
        def local(where: Path | str, name: str) -> Path:
            return (storage.download(str(where), Path(tmp) / name)
                    if storage.is_remote(where) else Path(where))

        copy = local(run, "run")
        others = [local(r, f"with-{i}") for i, r in enumerate(with_runs)]
        sources = [str(r) for r in with_runs]
        if out_dir is not None:
            return write_report(copy, wall_time_s, out_dir, source=str(run),
                                docs_page=docs_page, with_runs=others, with_sources=sources)
        out = Path(tmp) / "report"
        write_report(copy, wall_time_s, out, source=str(run), docs_page=docs_page)
        storage.upload(out, str(run))
    return storage.join(str(run), "report.md")


BEGIN = "<!-- raystudy:results begin"
END = "<!-- raystudy:results end -->"


def page_section(summary: dict[str, Any], analysis: Analysis, page: Path, run: str,
                 figures: list[tuple[str, Path]]) -> str:
    """A study page's generated results section: the run (command, date, hardware,
    versions), its claims, the study's own tables and figures (copied beside the page)."""
    study = summary["study"]
    hardware, versions = summary["hardware"], summary["versions"]
    counts = ", ".join(f"{n} {k}" for k, n in summary["counts"].items() if n)
    wall = summary.get("wall_time_s")
    shown_page = f"docs/{page.name}" if page.parent.name == "docs" else page.name
    lines = [f"{BEGIN} (written by `raystudy report RUN --page {shown_page}`; regenerate it, "
             "do not edit) -->", "## Results (generated from a run)", "",
             f"- **command**: `{command_line(summary['request'])}`",
             f"- **run**: `{_run_name(run)}`,"
             f" reported {summary['written_at']}; {counts}"
             + (f"; wall time {wall / 60:.1f} min" if isinstance(wall, (int, float)) else ""),
             f"- **hardware**: {hardware['cpu']} ({hardware['cpu_count']} CPUs"
             + (f", {hardware['device']}" if hardware.get("device") != "cpu" else "") + ")",
             "- **versions**: " + ", ".join(f"{k} {v}" for k, v in versions.items()), ""]
    if summary.get("merged"):
        lines[-1:-1] = ["- **with the trials of**: " + "; ".join(
            f"`{m['run']}` ({m['trials']} trials, `{command_line(m['request'])}`)"
            for m in summary["merged"])]
    lines += ["### Claims", ""]
    lines.append(render.claims_markdown(analysis.claims) if analysis.claims else NO_CLAIM)
    shown = page.parent / "figures" / study
    shown.mkdir(parents=True, exist_ok=True)
    for title, path in figures:
        copy = shown / path.name
        copy.write_bytes(path.read_bytes())
        lines.append(f"![{title}](figures/{study}/{path.name})\n")
    for table in analysis.tables:
        rows = table.rows[:TRIALS_SHOWN]
        note = table.note + (f" (the first {TRIALS_SHOWN} of {len(table.rows)} rows)"
                             if len(table.rows) > TRIALS_SHOWN else "")
        lines.append(render.markdown_table(Table(table.title, table.columns, rows, note), 4))
    lines.append(END)
    return "\n".join(lines) + "\n"


def _run_name(run: str) -> str:
    return storage.name(run) if storage.is_remote(run) else Path(run).name


def check_page(page: Path | str) -> Path:
    """The study page ``--page`` names, which must exist: checked before anything is
    written, so a wrong path leaves no figures behind."""
    page = Path(page)
    if not page.is_file():
        raise UserError(f"--page {page}: no such file (a study's page: docs/STUDY.md)")
    return page


def write_page_section(page: Path | str, section: str) -> None:
    """Put ``section`` in place of the page's generated section (appended where none)."""
    page = check_page(page)
    text = page.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = head + section + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    write_text_atomic(page, text)


def write_report(run_dir: Path | str, wall_time_s: float | None = None,
                 out_dir: Path | str | None = None, source: str | None = None,
                 docs_page: Path | str | None = None,
                 with_runs: Sequence[Path | str] = (),
                 with_sources: Sequence[str] | None = None) -> Path:
    """Build summary.json, report.md, report.html and figures/ for a run folder.

    ``out_dir`` (default: the run folder) is where they go, e.g. for a read-only copy;
    ``source`` is how the report names the run (its URI when ``run_dir`` is a copy);
    ``docs_page`` (a study's ``docs/STUDY.md``) gets the run's generated results section;
    ``with_runs``: more runs of the study whose trials the report reads too (then
    ``out_dir`` is required: the report is no one run's), named by ``with_sources``.
    """
    run_dir = Path(run_dir)
    if with_runs and out_dir is None:
        raise ValueError("write_report: with_runs needs out_dir")
    out = Path(out_dir) if out_dir is not None else run_dir
    if docs_page is not None:
        check_page(docs_page)
    others = [Path(r) for r in with_runs]
    names = [source or str(run_dir), *(with_sources or [str(r) for r in others])]
    results, study, base_config, parts = merged_results([run_dir, *others], names)
    check_writable(out, "report folder", need_bytes=1024**2,
                   hint="" if out_dir else " (write the report elsewhere with --out DIR)")
    if wall_time_s is None:
        walls = [_previous_wall_time(r) for r in (run_dir, *others)]
        known = [w for w in walls if w is not None]
        wall_time_s = float(sum(known)) if len(known) == len(walls) else None
    out.mkdir(parents=True, exist_ok=True)
    figures_dir = out / "figures"
    figures_dir.mkdir(exist_ok=True)
    analysis = study.analyze(results, figures_dir) if study.analyze else Analysis()
    counts = {s: len(results.by_status(s)) for s in STATUSES}

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
        "merged": [{"run": _run_name(name), "request": part.request,
                    "trials": len(part.trials)}
                   for name, part in zip(names[1:], parts[1:], strict=True)],
    }
    write_json_atomic(out / "summary.json", summary)

    header = _header(results, study, counts, summary["hardware"], summary["versions"])
    if summary["merged"]:
        header.insert(2, ("with the trials of", "; ".join(
            f"{m['run']} ({m['trials']} trials): {command_line(m['request'])}"
            for m in summary["merged"])))
    if wall_time_s is not None:
        header.insert(-2, ("wall time", f"{wall_time_s:.1f} s"))
    figures = list(analysis.figures)
    curves = curves_figure(results, study, figures_dir)
    if curves is not None:
        figures.append((f"{study.primary.name} of each trial over its reports", curves))
    figures = [(title, path.relative_to(out)) for title, path in figures]
    every = trials_table(results, study)
    write_trials_csv(out / "trials.csv", every)
    shown = Table(every.title, every.columns, every.rows[:TRIALS_SHOWN],
                  note=f"{every.note}; " + (f"the best {TRIALS_SHOWN} of {len(every.rows)}: "
                                            "every trial is in trials.csv"
                                            if len(every.rows) > TRIALS_SHOWN
                                            else "also in trials.csv"))
    tables = [*analysis.tables, shown]
    problems = [t for t in results.trials if t.status in ("diverged", "error")]
    if problems:
        tables.append(Table(
            "Diverged and failed trials", ["trial", "status", "params", "error"],
            [[t.trial_id, t.status, json.dumps(t.params), t.error or ""] for t in problems],
        ))
    defaults = to_flat_dict(study.config_cls())
    swept = _swept_values(results)
    config = render.config_rows(base_config, defaults, swept)

    md = [f"# {study.name} report", ""]
    md += [f"- **{k}**: {f'`{v}`' if k == 'command' else v}" for k, v in header] + [""]
    md += ["## Claim", "", render.claims_markdown(analysis.claims) if analysis.claims
           else NO_CLAIM + "\n"]
    md += [f"> {note}\n" for note in analysis.notes]
    md += [f"![{title}]({path})\n" for title, path in figures]
    md += [render.markdown_table(t) for t in tables]
    md += ["### Config", "", "_profile + overrides; bold: differs from the study's default_",
           "", render.config_markdown(config)]
    md.append(f"TensorBoard: `tensorboard --logdir {source or run_dir}`\n")
    write_text_atomic(out / "report.md", "\n".join(md))

    page = [f"<h1>{html.escape(study.name)} report</h1><dl class='head'>"]
    page += [f"<dt>{html.escape(k)}</dt><dd>"
             f"{f'<code>{html.escape(v)}</code>' if k == 'command' else html.escape(v)}</dd>"
             for k, v in header]
    page.append("</dl><h2>Claim</h2>")
    page.append(render.claims_html(analysis.claims) if analysis.claims
                else f"<p>{NO_CLAIM}</p>")
    page += [f"<blockquote>{html.escape(n)}</blockquote>" for n in analysis.notes]
    page += [f"<figure><img src='{p}' alt='{html.escape(t)}'><figcaption>{html.escape(t)}"
             "</figcaption></figure>" for t, p in figures]
    page += [render.html_table(t) for t in tables]
    page += ["<h3>Config</h3><p><em>profile + overrides; highlighted: differs from the "
             "study's default</em></p>", render.config_html(config)]
    write_text_atomic(out / "report.html",
        f"<!doctype html><html><head><meta charset='utf-8'><title>{study.name} report"
        f"</title><style>{render.CSS}</style></head><body>{''.join(page)}</body></html>\n"
    )
    if docs_page is not None:
        write_page_section(docs_page, page_section(summary, analysis, Path(docs_page),
                                                   source or str(run_dir),
                                                   list(analysis.figures)))
    return out / "report.md"
