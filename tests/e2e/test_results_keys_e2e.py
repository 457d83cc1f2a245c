"""results.csv names the key each row was really sent by: with ``match_by_ledger_id`` a row
the ledger knows goes on the wire as ``match_by: id`` with its record id, and results.csv
says so — for rows sent, and for unchanged rows (the key they would have been sent by),
whether found unchanged from their digests or from their payloads. The requests the
sandbox received are the witness."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from recordsync.run.pipeline import run_pipeline
from recordsync.send.client import make_http_client

from .support import all_records, served, target
from .test_faults_e2e import run_with
from .test_ledger_e2e import PEOPLE, contacts_pipeline, request, results, write_csv


def keys(result: Any) -> dict[str, tuple[str, str, str]]:
    return {
        r["source_row"]: (r["status"], r["match_by"], r["match_value"]) for r in results(result)
    }


def test_results_name_the_key_each_row_was_sent_by(tmp_path: Path) -> None:
    pipeline = contacts_pipeline(tmp_path, by_id=True)
    wire: list[dict[str, Any]] = []

    def seen(request: httpx.Request) -> None:
        if request.method == "POST" and request.url.path.endswith("/batch"):
            wire.extend(json.loads(request.content)["objects"])

    with served(tmp_path / "s.db") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        ids = {r["email"]: str(r["id"]) for r in all_records(url, "contacts")}
        changed = [row[:] for row in PEOPLE]
        changed[0][1] = "Ann "  # another cell, the same payload: unchanged from its payload
        changed[1][2] = "ben.carter@new.example"  # a new e-mail: sent by its record id
        write_csv(tmp_path / "people.csv", ["Contact ID", "Name", "Email"], changed)
        http = make_http_client(base_url=url)
        http.event_hooks = {"request": [seen], "response": []}
        try:
            second = run_pipeline(request(tmp_path, pipeline), target=target(url), http=http)
        finally:
            http.close()
    # the first run: the ledger knew nothing, every row went by its e-mail
    assert keys(first) == {
        "2": ("created", "email", "ann@x.example"),
        "3": ("created", "email", "ben@x.example"),
        "4": ("created", "email", "cy@x.example"),
    }
    assert [(o["match_by"], str(o["match_value"])) for o in wire] == [
        ("id", ids["ben@x.example"])
    ]
    assert keys(second) == {
        "2": ("unchanged", "id", ids["ann@x.example"]),
        "3": ("updated", "id", ids["ben@x.example"]),
        "4": ("unchanged", "id", ids["cy@x.example"]),
    }


def test_rows_after_a_lost_answer_keep_the_key_they_came_with(tmp_path: Path) -> None:
    """Deals have no dedup key: after a lost answer they are read back, never resent by
    another key (docs/run.md), so results.csv shows no key for any of them."""
    result, held = run_with(tmp_path, ["drop-after-apply:every=2:path=/batch"], "deals", 30)
    assert result.summary["steps"][0]["settled_by_reading"] > 0
    assert {r["match_by"] for r in results(result)} == {""}
    assert {r["status"] for r in results(result)} == {"created"}
    assert len(held) == 30
