"""The report's pieces as Markdown and HTML: claims grouped by sentence, tables, the config.

A claim's sentence is written once for its group (the claims that share it but for a
trailing ``(case)``, such as one per dataset), each case on its own row; the tests and
notes that a group shares are written once below the table. Each claim's scope is its own
column; when every tested claim shares one scope it is written once above the table and its
cells are left empty. Preconditions are written under their row (``✔``/``✘`` with the
evidence), once under a group's last row for those every case of the group shares.
Rows the run did not cover (``not run``) come after the tested ones. Verdicts are marked
in Markdown (``✔ supported``, ``✘ contradicted``, ``· inconclusive at this scale``,
``⚠ precondition failed``, ``○ not run``) and coloured in HTML. Text is left-aligned,
numbers right-aligned.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from raystudy.contract.study import Claim, Table

MARKS = {"supported": "✔", "contradicted": "✘", "inconclusive at this scale": "·",
         "precondition failed": "⚠", "not run": "○"}
_CASE = re.compile(r"^(?P<sentence>.*\S)\s+\((?P<case>[^()]*)\)$")


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


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------- claims
@dataclass
class ClaimGroup:
    """Claims sharing one sentence; ``cases`` name each (``""`` for a lone claim)."""

    sentence: str
    claims: list[Claim] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)

    def shared(self, attribute: str) -> str | None:
        """The test or note every claim of the group has, else None."""
        values = {getattr(c, attribute) for c in self.claims}
        return values.pop() if len(values) == 1 else None


def group_claims(claims: Sequence[Claim]) -> list[ClaimGroup]:
    """Claims in order, grouped by their sentence with any trailing ``(case)`` taken off;
    the ``not run`` rows after the tested ones (within a group, and groups of them last)."""
    groups: dict[str, ClaimGroup] = {}
    for claim in sorted(claims, key=lambda c: c.verdict == "not run"):
        match = _CASE.match(claim.statement)
        sentence, case = (match["sentence"], match["case"]) if match else (claim.statement, "")
        group = groups.setdefault(sentence, ClaimGroup(sentence))
        group.claims.append(claim)
        group.cases.append(case)
    return list(groups.values())


def effect_text(claim: Claim) -> str:
    return (f"{claim.effect}: {format_value(claim.effect_size)} "
            f"[{format_value(claim.ci_low)}, {format_value(claim.ci_high)}]")


def _p(claim: Claim) -> str:
    return "-" if claim.p_value is None else format_value(claim.p_value)


def precondition_lines(claim: Claim, skip: Sequence[Any] = ()) -> list[str]:
    """One line per precondition of ``claim`` not in ``skip``: held or failed, and its
    evidence."""
    return [_precondition_line(p) for p in claim.preconditions if p not in skip]


def _precondition_line(p: Any, shared: bool = False) -> str:
    every = " (every case)" if shared else ""
    return f"{'✔' if p.holds else '✘'} precondition{every}: {p.statement} ({p.evidence})"


def shared_preconditions(group: ClaimGroup) -> list[Any]:
    """The preconditions every claim of a group of two or more has (written once)."""
    if len(group.claims) < 2:
        return []
    first, *rest = group.claims
    return [p for p in first.preconditions if all(p in c.preconditions for c in rest)]


def common_scope(claims: Sequence[Claim]) -> str | None:
    """The scope every tested claim shares, when two or more share it (written once above
    the table), else None."""
    scopes = {c.scope for c in claims if c.verdict != "not run"}
    tested = sum(c.verdict != "not run" for c in claims)
    return scopes.pop() if tested >= 2 and len(scopes) == 1 else None


def table_rows(claims: Sequence[Claim]) -> tuple[list[ClaimGroup], str | None, list[tuple]]:
    """The table's rows in order: ``("claim", sentence, case, claim, scope shown)`` and
    ``("precondition", line)``, a group's shared preconditions after its last case."""
    groups = group_claims(claims)
    common = common_scope(claims)
    rows: list[tuple] = []
    for group in groups:
        shared = shared_preconditions(group)
        for index, (claim, case) in enumerate(zip(group.claims, group.cases, strict=True)):
            shown = "" if claim.scope == common and claim.verdict != "not run" else claim.scope
            rows.append(("claim", group.sentence if index == 0 else "", case or "-", claim,
                         shown))
            rows += [("precondition", line) for line in precondition_lines(claim, shared)]
        rows += [("precondition", _precondition_line(p, True)) for p in shared]
    return groups, common, rows


def _footnotes(groups: list[ClaimGroup]) -> list[tuple[str, str]]:
    """(label, text) of every test and note, once per group where the group shares it."""
    out = []
    for group in groups:
        for attribute in ("test", "note"):
            shared = group.shared(attribute)
            if shared is not None:
                if shared:
                    out.append((f"{group.sentence} -- {attribute}", shared))
                continue
            for claim, case in zip(group.claims, group.cases, strict=True):
                if getattr(claim, attribute):
                    out.append((f"{group.sentence} ({case}) -- {attribute}",
                                getattr(claim, attribute)))
    return out


CLAIM_HEAD = ["claim", "case", "scope", "effect [95 % CI]", "n", "p", "verdict"]


def claims_markdown(claims: Sequence[Claim]) -> str:
    groups, common, rows = table_rows(claims)
    lines = ([f"Scope of every tested claim: {escape_md(common)}", ""] if common else [])
    lines += ["| " + " | ".join(CLAIM_HEAD) + " |", "|:---|:---|:---|:---|---:|---:|:---|"]
    for row in rows:
        if row[0] == "precondition":
            lines.append(f"| | | | ↳ {escape_md(row[1])} | | | |")
            continue
        _, sentence, case, claim, scope = row
        cells = [f"**{escape_md(sentence)}**" if sentence else "", escape_md(case),
                 escape_md(scope), escape_md(effect_text(claim)), str(claim.n),
                 _p(claim), f"{MARKS.get(claim.verdict, '')} {claim.verdict}"]
        lines.append("| " + " | ".join(cells) + " |")
    notes = [f"- _{escape_md(label)}_: {escape_md(text)}" for label, text in _footnotes(groups)]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def claims_html(claims: Sequence[Claim]) -> str:
    groups, common, rows = table_rows(claims)
    head = "".join(f"<th>{c}</th>" for c in CLAIM_HEAD)
    body = []
    for row in rows:
        if row[0] == "precondition":
            body.append(f"<tr class='precondition'><td></td><td></td><td colspan='5'>"
                        f"{html.escape(row[1])}</td></tr>")
            continue
        _, sentence, case, claim, scope = row
        verdict = claim.verdict.split()[0]
        body.append(
            f"<tr class='{'group' if sentence else 'case'}'><td class='claim'>"
            f"{html.escape(sentence)}</td><td>{html.escape(case)}</td>"
            f"<td>{html.escape(scope)}</td>"
            f"<td>{html.escape(effect_text(claim))}</td><td class='num'>{claim.n}</td>"
            f"<td class='num'>{html.escape(_p(claim))}</td><td><span class='verdict "
            f"v-{verdict}'>{html.escape(claim.verdict)}</span></td></tr>")
    notes = "".join(f"<li><em>{html.escape(label)}</em>: {html.escape(text)}</li>"
                    for label, text in _footnotes(groups))
    scope = (f"<p class='scope'>Scope of every tested claim: {html.escape(common)}</p>"
             if common else "")
    return (f"{scope}<table class='claims'><tr>{head}</tr>{''.join(body)}</table>"
            + (f"<ul class='notes'>{notes}</ul>" if notes else ""))


def escape_md(text: str) -> str:
    """Text for a Markdown table cell: pipes escaped, and ``[a - b](T=1)`` kept from
    reading as a link."""
    return text.replace("|", "\\|").replace("](", "]\\(")


# ---------------------------------------------------------------- tables
def markdown_table(table: Table, level: int = 3) -> str:
    lines = [f"{'#' * level} {table.title}", ""]
    if table.note:
        lines += [f"_{table.note}_", ""]
    numeric = [bool(table.rows) and all(_is_number(r[i]) or r[i] is None for r in table.rows)
               for i in range(len(table.columns))]
    lines.append("| " + " | ".join(table.columns) + " |")
    lines.append("|" + "".join("---:|" if n else ":---|" for n in numeric))
    for row in table.rows:
        lines.append("| " + " | ".join(escape_md(format_value(v)) for v in row) + " |")
    return "\n".join(lines) + "\n"


def html_table(table: Table, level: int = 3, row_classes: Sequence[str] = ()) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    body = []
    for index, row in enumerate(table.rows):
        css = f" class='{row_classes[index]}'" if index < len(row_classes) and \
            row_classes[index] else ""
        cells = "".join(f"<td{' class=num' if _is_number(v) else ''}>"
                        f"{html.escape(format_value(v))}</td>" for v in row)
        body.append(f"<tr{css}>{cells}</tr>")
    note = f"<p><em>{html.escape(table.note)}</em></p>" if table.note else ""
    title = f"<h{level}>{html.escape(table.title)}</h{level}>"
    return f"{title}{note}<table><tr>{head}</tr>{''.join(body)}</table>"


# ---------------------------------------------------------------- config
def config_rows(config: dict[str, Any], defaults: dict[str, Any],
                swept: dict[str, list[Any]]) -> list[tuple[str, str, str, bool]]:
    """(key, value, default, differs) for every key; a swept key shows its values."""
    rows = []
    for key, value in config.items():
        default = defaults.get(key)
        if key in swept:
            values = swept[key]
            shown = (f"swept: {', '.join(format_value(v) for v in values)}" if len(values) <= 6
                     else f"swept: {format_value(values[0])} ... {format_value(values[-1])} "
                          f"({len(values)} values)")
            rows.append((key, shown, format_value(default), True))
        else:
            rows.append((key, format_value(value), format_value(default), value != default))
    return rows


def config_markdown(rows: list[tuple[str, str, str, bool]]) -> str:
    lines = ["| key | value | default |", "|:---|:---|:---|"]
    lines += [f"| {'**' + key + '**' if differs else key} | {escape_md(value)} | "
              f"{escape_md(default)} |" for key, value, default, differs in rows]
    return "\n".join(lines) + "\n"


def config_html(rows: list[tuple[str, str, str, bool]]) -> str:
    body = "".join(f"<tr{' class=changed' if differs else ''}><td>{html.escape(key)}</td>"
                   f"<td>{html.escape(value)}</td><td>{html.escape(default)}</td></tr>"
                   for key, value, default, differs in rows)
    return f"<table class='config'><tr><th>key</th><th>value</th><th>default</th></tr>{body}" \
           "</table>"


CSS = (
    "body{font-family:system-ui,sans-serif;max-width:1150px;margin:2em auto;color:#222;"
    "line-height:1.4}table{border-collapse:collapse;margin:.8em 0}td,th{border:1px solid "
    "#ddd;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}img{max-width:100%}"
    ".verdict{padding:1px 7px;border-radius:9px;white-space:nowrap}"
    ".v-supported{background:#d7f5dd;color:#0f5d22}.v-contradicted{background:#fadada;"
    "color:#8a1212}.v-inconclusive{background:#ececec;color:#555}"
    ".v-precondition{background:#fdebc8;color:#7a4a00}.v-not{background:#fff;color:#666;"
    "border:1px dashed #aaa}tr.precondition td{font-size:.88em;color:#555;border-top:0}"
    "tr.group td{border-top:2px solid #bbb}td.claim{font-weight:600;max-width:24em}"
    "tr.changed td{background:#fff7d6}ul.notes{font-size:.9em;color:#444}"
    "dl.head{display:grid;grid-template-columns:max-content auto;gap:2px 12px}"
    "dl.head dt{font-weight:600}dl.head dd{margin:0}code{background:#f4f4f4;padding:0 3px}"
)
