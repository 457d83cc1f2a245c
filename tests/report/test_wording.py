"""The merges and duplicates sentences: one place words them for report.md and report.html."""

from __future__ import annotations

from typing import Any

from recordsync.report.html import render_html
from recordsync.report.markdown import render_report
from recordsync.report.tally import StepTally
from recordsync.report.wording import held_and_duplicate, html_text, service_merged


def _summary() -> dict[str, Any]:
    steps = [
        {"step": "companies", "rows_merged": 2, "merged": 1, "rows_duplicate": 3},
        {"step": "contacts", "rows_duplicate": 1, "duplicates_expected": True},
    ]
    totals = {"rows_merged": 2, "merged": 1, "rows_duplicate": 4, "rows_not_ok": 6}
    totals |= {"rows_invalid": 0, "in_doubt": 0, "failed": 0}
    return {"run_id": "r", "steps": steps, "totals": totals, "accounting_ok": True}


def _tallies() -> list[StepTally]:
    tally = StepTally("contacts", "contacts.yaml", "contacts", merged_creates=2, shared_records=1)
    tally.merged_examples = ["row 2 <a@x.io>", "row 3"]
    tally.shared_examples = ["row 4"]
    return [tally]


def test_every_sentence_is_in_its_format_with_that_formats_markup() -> None:
    summary, tallies = _summary(), _tallies()
    md, page = render_report(summary, tallies), render_html(summary, tallies)
    full = held_and_duplicate(summary, brief=False) + service_merged(tallies, brief=False)
    brief = held_and_duplicate(summary, brief=True) + service_merged(tallies, brief=True)
    assert len(full) == len(brief) == 6
    for sentence in full:
        assert f"- {sentence.step}: {sentence.text}\n" in md
    for sentence in brief:
        assert f"<li><b>{sentence.step}</b>: {html_text(sentence.text)}" in page
    assert "(declared expected)" in page and "declared expected: they do not" in md
    assert "  - row 2 <a@x.io>\n" in md and "<li>row 2 &lt;a@x.io&gt;</li>" in page


def test_html_text_escapes_and_marks_code_spans() -> None:
    assert html_text("named in `_error` <b> & `a<b`") == (
        "named in <code>_error</code> &lt;b&gt; &amp; <code>a&lt;b</code>"
    )
