"""report.md's sections on the read-back and the skill after the run."""

from __future__ import annotations

from typing import Any

from recordsync.report.readback import readback_sections

STEP = {
    "step": "contacts",
    "records_read": 10,
    "written_read": 5,
    "unchanged_read": 5,
    "mismatched_records": 2,
    "max_mismatch": 0,
    "unreadable": 1,
    "failed": True,
    "examples": ['people.csv:7 (created, record 12) phone: sent "+1", stored "+2"'],
    "problems": ["record 13: GET /api/objects/contacts: HTTP 503: down"],
}
VERIFY: dict[str, Any] = {
    "enabled": True,
    "requests": 11,
    "records_read": 10,
    "mismatched_records": 2,
    "mismatched_fields": 3,
    "unreadable": 1,
    "failed": True,
    "file": "readback_mismatches.csv",
    "steps": [STEP],
}


def test_read_back_section() -> None:
    text = "\n".join(readback_sections({"verify": VERIFY}))
    assert (
        "10 record(s) read back (11 request(s)): 2 differ from what was sent (3 field(s))" in text
    )
    assert "`readback_mismatches.csv`" in text and "**(over the limit)**" in text
    assert "phone: sent" in text and "(not compared): record 13" in text
    assert "exits 1" in text


def test_nothing_read_back_says_why() -> None:
    text = "\n".join(readback_sections({"verify": {"enabled": False, "why": "--no-verify"}}))
    assert "Not done: --no-verify." in text
    assert readback_sections({}) == []


def test_skill_sections() -> None:
    base = {"id": "00000000-0000-4000-8000-000000000001", "when": ["failed", "rows_not_ok"]}
    done = {**base, "triggered": True, "skill_run_id": "abc", "payload_bytes": 900}
    failed = {
        **base,
        "triggered": False,
        "error": "POST /api/webhooks/x: HTTP 404: Skill not found",
    }
    skipped = {**base, "triggered": False, "skipped": "the run's outcome is ok"}
    show = [
        ("\n".join(readback_sections({"after_run": {"skill": s}}))) for s in (done, failed, skipped)
    ]
    assert "(when: failed, rows_not_ok): triggered (skill run abc, 900 bytes)" in show[0]
    assert "**not triggered**: POST /api/webhooks/x: HTTP 404: Skill not found" in show[1]
    assert "not triggered: the run's outcome is ok" in show[2]
