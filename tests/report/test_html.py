"""report.html's renderer and the example rows of the reasons (tests/e2e has the page of real
runs, and loads it in Chromium)."""

from __future__ import annotations

import html
import re

import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from recordsync.core.model import SourceRow
from recordsync.report.examples import PER_REASON, named_column
from recordsync.report.html import render_html
from recordsync.report.html_sections import checks
from recordsync.report.tally import StepTally, message_value, reason_group


def _tally_with(value_map: dict[str, str]) -> StepTally:
    tally = StepTally("people", "people.yaml", "contacts", read=1)
    tally.value_maps["stage"] = {"column": "Stage", "value_map": value_map}
    return tally


@settings(max_examples=60)
@given(st.dictionaries(st.text(min_size=1), st.text(), min_size=1, max_size=4))
@example({"0": "\x85"})  # PyYAML folds U+0085 in a quoted scalar written as is
@example({"Müller": "müller", "yes": "no", "#1": "a: b", "'=x'": '"'})
def test_value_map_snippets_round_trip(value_map: dict[str, str]) -> None:
    summary = {"steps": [], "totals": {}, "run_id": "r"}
    page = render_html(summary, [_tally_with(value_map)])
    (snippet,) = re.findall(r"<pre>(.*?)</pre>", page, re.S)
    loaded = yaml.safe_load(html.unescape(snippet))
    assert loaded == {"fields": {"stage": {"column": "Stage", "value_map": value_map}}}


def test_example_rows_are_bounded_per_reason_group() -> None:
    tally = StepTally("people", "people.yaml", "contacts")
    for row in range(2, 1002):
        error = f"column 'Score' → field 'lead_score': '{row}' must be <= 100"
        tally.add_reason(error, SourceRow("p.csv", row, {"Score": str(row)}))
    ((group, examples),) = tally.examples.items()
    assert tally.reasons[group] == 1000 and len(examples) == PER_REASON
    assert [(e.source_row, e.column, e.value) for e in examples[:2]] == [
        (2, "Score", "2"),
        (3, "Score", "3"),
    ]


def test_the_column_and_the_value_a_message_names() -> None:
    assert named_column("column 'Last Contacted' → field 'x': 'y' is bad") == "Last Contacted"
    assert named_column(r"column 'it\'s' value ' 9 ' (sent 9) → company_id: no") == "it's"
    assert named_column("line 7: malformed line: expected 3 cells, found 4") is None
    assert message_value("company_id: no 'companies' record with key 'a.com' in") == "a.com"
    assert message_value("duplicate key email:a@b.c: row 9 has the same key") == "email:a@b.c"
    assert message_value("line 7: malformed line: expected 3 cells, found 4") is None


def test_an_apostrophe_in_a_message_is_not_a_quote() -> None:
    message = (
        "merges with row 3: the service would fold it into that row's record (same name as"
        " row 3 once case, punctuation and a legal suffix are removed: 'globex'); not sent"
    )
    assert message_value(message) == "globex"
    assert "that row's record" in reason_group(message) and "'…'" in reason_group(message)


def test_the_checks_around_sending_are_in_the_html_report() -> None:
    """Volume guards, the read-back and the skill after the run: report.md's words, as HTML."""
    summary = {
        "guards": [
            {
                "step": "people",
                "kind": "drop",
                "previous": 30,
                "current": 3,
                "threshold": 0.5,
                "action": "skip_deletes",
            }
        ],
        "verify": {
            "enabled": True,
            "records_read": 10,
            "requests": 10,
            "mismatched_records": 1,
            "mismatched_fields": 1,
            "unreadable": 0,
            "failed": True,
            "file": "readback_mismatches.csv",
            "steps": [
                {
                    "step": "people",
                    "records_read": 10,
                    "written_read": 5,
                    "unchanged_read": 5,
                    "mismatched_records": 1,
                    "failed": True,
                    "max_mismatch": 0,
                    "unreadable": 0,
                    "examples": ["record 7, email: sent '<a>', stored 'b'"],
                    "problems": [],
                }
            ],
        },
        "after_run": {"skill": {"id": "abc", "when": ["failed"], "error": "HTTP 404"}},
    }
    html = "\n".join(checks(summary))
    assert "<h2>Volume guards</h2>" in html and "3 rows against 30" in html
    assert "<h2>Read-back</h2>" in html and "<code>readback_mismatches.csv</code>" in html
    assert "<td>1 <b>(over the limit)</b></td>" in html and "---" not in html
    assert "sent &#x27;&lt;a&gt;&#x27;" in html  # escaped
    assert "<h2>After the run</h2>" in html and "<b>not triggered</b>: HTTP 404" in html
    assert html.count("<section>") == html.count("</section>") == 3
    assert checks({}) == []
