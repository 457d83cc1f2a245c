"""Sections of report.html (recordsync.report.html): suggested value maps, merges and
duplicates, owners and references; and the escaping every section uses."""

from __future__ import annotations

import re
from html import escape
from typing import Any

import yaml

from recordsync.report.markdown import guards_section
from recordsync.report.next_steps import next_steps
from recordsync.report.readback import readback_sections
from recordsync.report.tally import StepTally
from recordsync.report.wording import OWNER_WORDS, held_and_duplicate, html_text, service_merged

PAGE_EXAMPLES = 5
"""Examples of rows the service merged, per step."""


def e(value: object) -> str:
    return escape(str(value), quote=True)


def num(value: Any, *, step: str | None, key: str) -> str:
    where = f'data-step="{e(step)}" data-key="{key}"' if step is not None else f'data-total="{key}"'
    return f'<td class="n" {where}>{int(value or 0)}</td>'


def value_maps(tallies: list[StepTally]) -> list[str]:
    with_maps = [t for t in tallies if t.value_maps]
    if not with_maps:
        return []
    out = [
        '<section><h2>Suggested value maps</h2><p class="muted">Only confident ones (a typo, '
        "another spelling or an abbreviation of an option). Paste into the step's mapping "
        "(merge with a <code>value_map</code> it already has):</p>"
    ]
    for t in with_maps:
        fields = {
            f: ({"column": m["column"]} if m["column"] else {}) | {"value_map": m["value_map"]}
            for f, m in t.value_maps.items()
        }
        snippet = _yaml({"fields": fields})
        out.append(f"<h3>{e(t.step)} <small>{e(t.mapping)}</small></h3><pre>{e(snippet)}</pre>")
    return [*out, "</section>"]


def owners_and_references(summary: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for step in summary["steps"]:
        counts = step.get("owners") or {}
        found = [(w, k) for k, w in OWNER_WORDS if counts.get(k)]
        if len(found) > 1 or (found and not counts.get("not_looked_up")):
            cells = "".join(
                f'<span class="key">{e(w)} <b data-step="{e(step["step"])}" '
                f'data-key="owners.{k}">{int(counts[k])}</b></span>'
                for w, k in found
            )
            out.append(f'<p><span class="tag">{e(step["step"])}</span> {cells}</p>')
    if out:
        out = [
            '<section><h2>Owners</h2><p class="muted">Rows by how their owner was found:</p>',
            *out,
            "</section>",
        ]
    refs = [(s, f, c) for s in summary["steps"] for f, c in (s.get("references") or {}).items()]
    if refs:
        keys = ("set", "no_value", "not_found", "ambiguous")
        head = "".join(f'<th class="n">{k.replace("_", " ")}</th>' for k in keys)
        out.append(
            '<section><h2>References</h2><table class="counts"><tr><th>step</th>'
            f"<th>field</th><th>refers to</th><th>by</th>{head}</tr>"
        )
        for s, fname, c in refs:
            nums = "".join(
                num(c.get(k), step=s["step"], key=f"references.{fname}.{k}") for k in keys
            )
            loud = (
                ' class="bad"'
                if not c.get("set") and (c.get("not_found") or c.get("ambiguous"))
                else ""
            )
            out.append(
                f"<tr{loud}><th>{e(s['step'])}</th><td>{e(fname)}</td>"
                f"<td>{e(c.get('step', ''))}</td><td>{e(c.get('by', ''))}</td>{nums}</tr>"
            )
        out.append("</table></section>")
    return out


def _yaml(data: dict[str, Any]) -> str:
    """``data`` as YAML, readable (unicode as is) unless that would not load back the same
    (PyYAML folds some characters, e.g. U+0085, in quoted scalars): then escaped."""
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    if yaml.safe_load(text) == data:
        return text
    return yaml.safe_dump(data, sort_keys=False)


def merges(summary: dict[str, Any], tallies: list[StepTally]) -> list[str]:
    """Merges and duplicates (recordsync.report.wording, brief): one list item a sentence."""
    items = [
        f"<li><b>{e(s.step)}</b>: {html_text(s.text)}</li>"
        for s in held_and_duplicate(summary, brief=True)
    ]
    for s in service_merged(tallies, brief=True):
        sub = "".join(f"<li>{e(x)}</li>" for x in s.examples[:PAGE_EXAMPLES])
        items.append(f"<li><b>{e(s.step)}</b>: {html_text(s.text)}<ul>{sub}</ul></li>")
    if not items:
        return []
    return ["<section><h2>Merges and duplicates</h2><ul>", *items, "</ul></section>"]


def next_steps_section(summary: dict[str, Any]) -> list[str]:
    """report.md's "Next steps" (recordsync.report.next_steps), failures.csv as a link."""
    name = e((summary.get("files") or {}).get("failures", "failures.csv"))
    link = f'<a href="{name}">{name}</a>'
    items = [html_text(s).replace("<code>failures.csv</code>", link) for s in next_steps(summary)]
    if not items:
        return []
    return [
        "<section><h2>Next steps</h2><ul>",
        *(f"<li>{i}</li>" for i in items),
        "</ul></section>",
    ]


def checks(summary: dict[str, Any]) -> list[str]:
    """report.md's sections on the checks around sending (volume guards, read-back, the skill
    after the run), the same words as HTML."""
    return _from_markdown([*guards_section(summary), *readback_sections(summary)])


def _inline(text: str) -> str:
    return _BOLD.sub(r"<b>\1</b>", html_text(text))


_BOLD = re.compile(r"\*\*(.+?)\*\*")


def _from_markdown(lines: list[str]) -> list[str]:
    """The few shapes those sections use: ``## title``, ``- item``, tables, paragraphs."""
    out: list[str] = []
    table: list[list[str]] = []
    items: list[str] = []

    def flush() -> None:
        if items:
            out.extend(["<ul>", *(f"<li>{_inline(i)}</li>" for i in items), "</ul>"])
            items.clear()
        if table:
            head, *rows = table
            out.append("<table><tr>" + "".join(f"<th>{e(c)}</th>" for c in head) + "</tr>")
            out.extend(
                "<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in rows
            )
            out.append("</table>")
            table.clear()

    for line in lines:
        if line.startswith("|"):
            if not set(line) <= set("|-: "):  # not the |---| line
                cells = line.strip().strip("|").split(" | ")
                table.append([c.strip().replace("\\|", "|") for c in cells])
            continue
        if line.startswith("- "):
            items.append(line[2:])
            continue
        flush()
        if line.startswith("## "):
            if out:
                out.append("</section>")
            out.append(f"<section><h2>{e(line[3:])}</h2>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    flush()
    return [*out, "</section>"] if out else []
