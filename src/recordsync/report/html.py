"""``report.html``: the run's report for a browser, written beside report.md.

One self-contained file: inline CSS and SVG, no script, no font, image or request of any kind
(a Content-Security-Policy of ``default-src 'none'`` makes sure). Built from summary.json and
the tallies (their bounded reason groups and example rows), never from results.csv, so it
costs the same for 10 rows as for 10M. Every number that comes from summary.json carries
``data-step``/``data-key`` (or ``data-total``) attributes naming where it came from. Every cell
value is HTML-escaped and formula-safe (as in failures.csv).
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from recordsync.report.examples import ReasonExample, safe_cell
from recordsync.report.group_steps import group_step, groups
from recordsync.report.html_sections import (
    checks,
    e,
    merges,
    next_steps_section,
    num,
    owners_and_references,
    value_maps,
)
from recordsync.report.html_style import CSS
from recordsync.report.tally import COUNT_COLUMNS, StepTally
from recordsync.report.wording import html_text

HTML_REASONS = 50
"""Reason groups shown (the largest first); every row's message is in failures.csv."""
TABLE_KEYS = (*COUNT_COLUMNS, ("not ok", "rows_not_ok"))
SEGMENTS = (
    ("created", ("created",), "#2f9e5f"),
    ("updated", ("updated",), "#3b7dd8"),
    ("valid (dry run)", ("valid",), "#7cc49a"),
    ("unchanged", ("rows_unchanged",), "#a3adb8"),
    ("merged", ("rows_merged", "merged"), "#8a5cc7"),
    ("duplicate", ("rows_duplicate",), "#e0a400"),
    ("invalid", ("rows_invalid",), "#e8702a"),
    ("failed", ("failed",), "#d43f3f"),
    ("in doubt", ("in_doubt",), "#9c2f73"),
)
"""The bar of a step: what became of its rows read, in this order (a dry run's sent rows are
``valid``)."""


def _segments(step: dict[str, Any], dry_run: bool) -> list[tuple[str, int, str]]:
    counts = {**step, "valid": step.get("rows_sent", 0) if dry_run else 0}
    return [
        (name, sum(int(counts.get(k) or 0) for k in keys), color) for name, keys, color in SEGMENTS
    ]


def _bar(step: dict[str, Any], dry_run: bool) -> str:
    """A stacked bar of the step's rows read (each segment at least a sliver when not 0)."""
    parts = [(n, v, c) for n, v, c in _segments(step, dry_run) if v]
    total = sum(v for _, v, _ in parts) or 1
    widths = [max(v / total * 1000, 6.0) for _, v, _ in parts]
    scale = 1000 / (sum(widths) or 1)
    x, rects = 0.0, []
    for (name, value, color), w in zip(parts, widths, strict=True):
        rects.append(
            f'<rect x="{x:.1f}" y="0" width="{w * scale:.1f}" height="28" fill="{color}">'
            f"<title>{e(name)}: {value}</title></rect>"
        )
        x += w * scale
    legend = "".join(
        f'<span class="key"><i style="background:{c}"></i>{e(n)} <b>{v}</b></span>'
        for n, v, c in parts
    )
    svg = (
        '<svg class="bar" viewBox="0 0 1000 28" preserveAspectRatio="none" role="img" '
        f'aria-label="outcomes of {e(step["step"])}">{"".join(rects)}</svg>'
    )
    return svg + f'<div class="legend">{legend or "no rows read"}</div>'


def _steps(summary: dict[str, Any]) -> list[str]:
    dry = bool(summary.get("dry_run"))
    out = ["<section><h2>Steps</h2>"]
    for step in summary["steps"]:
        name = step["step"]
        out.append(
            f'<div class="step"><h3>{e(name)} <small>{e(step.get("object_type", ""))} · '
            f"{int(step.get('rows_read') or 0)} rows read</small></h3>{_bar(step, dry)}</div>"
        )
    head = "".join(f'<th class="n">{e(label)}</th>' for label, _ in TABLE_KEYS)
    out.append(f'<table class="counts"><tr><th>step</th>{head}</tr>')
    for step in summary["steps"]:
        cells = "".join(num(step.get(k), step=step["step"], key=k) for _, k in TABLE_KEYS)
        out.append(f"<tr><th>{e(step['step'])}</th>{cells}</tr>")
    totals = summary.get("totals", {})
    cells = "".join(num(totals.get(k), step=None, key=k) for _, k in TABLE_KEYS)
    out.append(f'<tr class="total"><th>total</th>{cells}</tr></table></section>')
    return out


def _example_row(ex: ReasonExample) -> str:
    """Row, file, key, column and value; with no column, the row's own message too."""
    value = (
        ""
        if ex.value is None
        else f"<code>{e(safe_cell(ex.value))}</code>"
        if ex.value
        else '<span class="muted">(empty)</span>'
    )
    if ex.column is None:
        value += f'<div class="msg">{e(safe_cell(ex.error, 240))}</div>'
    column = e(ex.column) if ex.column is not None else '<span class="muted">—</span>'
    key = e(safe_cell(ex.key, 60)) if ex.key else '<span class="muted">—</span>'
    name = PurePath(ex.source_file).name or ex.source_file  # the whole path in its title
    return (
        f'<tr><td class="n">{ex.source_row}</td><td title="{e(ex.source_file)}">{e(name)}</td>'
        f"<td>{key}</td><td>{column}</td><td>{value}</td></tr>"
    )


def _reasons(summary: dict[str, Any], tallies: list[StepTally]) -> list[str]:
    found = groups(tallies, str(summary.get("report_dir") or "<this directory>"))
    if not found:
        return []
    failures = e(_row_files(summary)[0])
    out = [
        '<section><h2>Failure reasons</h2><p class="muted">Grouped with the values taken '
        "out; a few example rows each, and what to do. Every row and its own message: "
        f'<a href="{failures}">{failures}</a>.</p>'
    ]
    for g in found[:HTML_REASONS]:
        rows = "".join(_example_row(ex) for ex in g.examples)
        out.append(
            f'<div class="reason"><div class="rhead"><span class="count">{g.rows}</span>'
            f'<span class="tag">{e(g.tally.step)}</span><span class="rtext">{e(g.reason)}</span>'
            "</div>"
            + (
                '<table class="ex"><tr><th>row</th><th>file</th><th>match key</th><th>column</th>'
                f"<th>value</th></tr>{rows}</table>"
                if rows
                else ""
            )
            + f'<p class="next"><b>Next step:</b> {html_text(group_step(g))}</p></div>'
        )
    rest = found[HTML_REASONS:]
    if rest:
        out.append(
            f'<p class="muted">{len(rest)} more reason groups, {sum(g.rows for g in rest)}'
            f" rows: see {failures}.</p>"
        )
    return [*out, "</section>"]


def _notices(summary: dict[str, Any], tallies: list[StepTally]) -> list[str]:
    """Warnings and everything else a reader must not miss."""
    notes = [f"warning: {w}" for w in summary.get("warnings") or []]
    if summary.get("aborted"):
        notes.append(f"aborted: {summary['aborted']}")
    notes += [f"accounting: {e}" for e in summary.get("accounting_errors") or []]
    for t in tallies:
        if t.aborted:
            notes.append(f"step {t.step} aborted: {t.aborted}")
        if t.unreconciled_chunks:
            notes.append(
                f"step {t.step}: {t.unreconciled_chunks} chunk(s) unreconciled; "
                "their rows are in doubt"
            )
    for step in summary["steps"]:
        if step.get("mirror_deletes_skipped"):
            notes.append(
                f"mirror deletes of step {step['step']} skipped: {step['mirror_deletes_skipped']}"
            )
        if step.get("source_changed_since_interrupted_attempt"):
            notes.append(
                f"step {step['step']} (resumed): {step['source_changed_since_interrupted_attempt']}"
            )
    t = summary.get("totals", {})
    if t.get("deleted") or t.get("delete_failed"):
        notes.append(
            f"mirror deletes: {t.get('deleted', 0)} record(s) soft-deleted, "
            f"{t.get('delete_failed', 0)} delete(s) failed (see the run's log)"
        )
    if not notes:
        return []
    return [
        '<section class="notices"><h2>Warnings</h2><ul>',
        *(f"<li>{e(n)}</li>" for n in notes),
        "</ul></section>",
    ]


def _verdict(summary: dict[str, Any]) -> tuple[str, str]:
    """The one line at the top, and its class (``ok`` or ``bad``)."""
    bad = int(summary.get("totals", {}).get("rows_not_ok") or 0)
    dry = summary.get("dry_run")
    if summary.get("aborted"):
        return "The run was aborted: see the warnings below", "bad"
    if not summary.get("accounting_ok", True):
        return "The report does not add up (accounting mismatch)", "bad"
    read = int(summary.get("totals", {}).get("rows_read") or 0)
    of = f"{bad:,} of {read:,} rows not ok"  # as the run's last line says it
    if bad and dry:
        return f"{of}: a real run would leave them without a record of their own", "bad"
    if bad:
        return f"{of}: they have no record of their own holding their values", "bad"
    if dry:
        return "Dry run, nothing was written: every row read would get a record of its own", "ok"
    return "Every row read has a record of its own holding its values", "ok"


def _header(summary: dict[str, Any]) -> list[str]:
    dry = summary.get("dry_run")
    badges = ('<span class="badge">dry run</span>' if dry else "") + (
        f'<span class="badge">retry of {e(summary["retry_of"])}</span>'
        if summary.get("retry_of")
        else ""
    )
    verdict, cls = _verdict(summary)
    meta = "".join(
        f"<dt>{label}</dt><dd>{e(summary.get(key) or '')}</dd>"
        for label, key in (
            ("pipeline", "pipeline"),
            ("target", "target"),
            ("started", "started_at"),
            ("finished", "finished_at"),
        )
    )
    links = " · ".join(
        f'<a href="{f}">{f}</a>'
        for f in (*_row_files(summary), "report.md", "summary.json")
    )
    return [
        f"<header><h1>recordsync run <span>{e(summary.get('run_id', ''))}</span>{badges}</h1>",
        f'<p class="verdict {cls}">{e(verdict)}</p><dl>{meta}</dl>',
        f"<nav>Files: {links}</nav></header>",
    ]


def _row_files(summary: dict[str, Any]) -> tuple[str, str]:
    """failures.csv and results.csv as this run wrote them (``.gz`` when compressed)."""
    files = summary.get("files") or {}
    return files.get("failures", "failures.csv"), files.get("results", "results.csv")


def render_html(summary: dict[str, Any], tallies: list[StepTally]) -> str:
    body = [
        *_header(summary),
        *_notices(summary, tallies),
        *_steps(summary),
        *_reasons(summary, tallies),
        *value_maps(tallies),
        *merges(summary, tallies),
        *checks(summary),
        *owners_and_references(summary),
        *next_steps_section(summary),
    ]
    title = f"recordsync run {summary.get('run_id', '')}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{CSS}</style></head><body><main>\n"
        + "\n".join(body)
        + "\n</main></body></html>\n"
    )
