"""Property: whatever the network does, a chunk never creates a record twice for one entry,
never lets an entry meant to create overwrite another entry's record, never takes another
entry's record as its own when reading back, and every entry ends with exactly one outcome
(hypothesis against a simulated service, which also answers the list reads)."""

from __future__ import annotations

import email.utils
import json
from collections import Counter
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.core.model import RowStatus
from recordsync.send.sender import ChunkSender

from .support import fake_client

FAULTS = ("ok", "503", "connect", "drop_after", "500_after", "timeout_after")
NOW = 1e9  # the clock of the client (tests' RetryPolicy) and of this service: all one second
STAMP = "2001-09-09T01:46:40.000Z"


class Service:
    """Applies batches like the seed says: match_by id/email/name, contacts dedup by email,
    everything else without a match is a new record. Remembers which entry created what."""

    def __init__(self, object_type: str, faults: list[str]) -> None:
        self.object_type = object_type
        self.faults = iter(faults)
        self.records: list[dict[str, Any]] = []
        self.created_by: Counter[int] = Counter()
        self.hijacked: list[tuple[int, int]] = []
        """(entry tag, creator tag): an entry meant to create its own record updated another's."""

    def _find(self, entry: dict[str, Any]) -> dict[str, Any] | None:
        by, value = entry.get("match_by"), entry.get("match_value")
        fields = entry.get("fields") or {}
        for r in self.records:
            if (by == "id" and r["id"] == value) or (by == "name" and r["name"] == value):
                return r
            if by == "email" and r.get("email") == value:
                return r
        email = fields.get("email")
        if self.object_type == "contacts" and email:
            return next((r for r in self.records if r.get("email") == email), None)
        return None

    def apply(self, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        results = []
        for entry in objects:
            found = self._find(entry)
            fields = entry.get("fields") or {}
            if found is not None:
                if not fields["may_match"] and found["creator"] != fields["tag"]:
                    self.hijacked.append((fields["tag"], found["creator"]))
                found.update(fields, name=entry["name"])
                results.append({"id": found["id"], "status": "updated"})
            else:
                rec = {
                    "id": len(self.records) + 1,
                    "email": None,
                    **fields,
                    "name": entry["name"],
                    "creator": fields["tag"],
                    "created_at": STAMP,
                    "updated_at": STAMP,
                }
                self.records.append(rec)
                self.created_by[fields["tag"]] += 1
                results.append({"id": rec["id"], "status": "created"})
        return results

    def read(self, request: httpx.Request) -> httpx.Response:
        """The list endpoint: ``filter[name]`` as a case-insensitive substring, one page."""
        wanted = request.url.params.get("filter[name]", "").casefold()
        data = [r for r in self.records if wanted in r["name"].casefold()]
        page = {"total": len(data), "limit": 200, "offset": 0, "has_more": False}
        date = email.utils.formatdate(NOW, usegmt=True)
        return httpx.Response(200, json={"data": data, "pagination": page}, headers={"date": date})

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return self.read(request)
        fault = next(self.faults, "ok")
        objects = json.loads(request.content)["objects"]
        if fault == "503":
            return httpx.Response(503, json={"error": "busy"})
        if fault == "connect":
            raise httpx.ConnectError("refused", request=request)
        results = self.apply(objects)
        if fault == "drop_after":
            raise httpx.RemoteProtocolError("peer closed", request=request)
        if fault == "timeout_after":
            raise httpx.ReadTimeout("slow", request=request)
        if fault == "500_after":
            return httpx.Response(500, json={"error": "crashed"})
        summary = Counter(r["status"] for r in results)
        return httpx.Response(
            200,
            json={
                "results": results,
                "summary": {
                    "total": len(results),
                    "created": summary["created"],
                    "updated": summary["updated"],
                    "failed": 0,
                },
            },
        )


entries = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["Ann", "Bob", "Cy", "Dee", "Eve"]),
            "email": st.one_of(st.none(), st.sampled_from(["a@x.io", "b@x.io", "c@x.io"])),
            "match": st.sampled_from([None, None, "name"]),
        }
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(
    object_type=st.sampled_from(["contacts", "deals"]),
    chunks=st.lists(entries, min_size=1, max_size=3),
    faults=st.lists(st.sampled_from(FAULTS), max_size=12),
)
def test_no_entry_creates_two_records_and_every_entry_has_one_outcome(
    object_type: str, chunks: list[list[dict[str, Any]]], faults: list[str]
) -> None:
    service = Service(object_type, faults)
    sender = ChunkSender(fake_client(service, max_attempts=3), object_type)
    tag = 0
    for n, chunk in enumerate(chunks):
        batch = []
        for e in chunk:
            fields: dict[str, Any] = {"tag": tag, "may_match": bool(e["match"])}
            if e["email"] and object_type == "contacts":
                fields["email"] = e["email"]
                fields["may_match"] = True  # dedup by email is the entry's own choice
            entry: dict[str, Any] = {"name": e["name"], "fields": fields}
            if e["match"]:
                entry.update(match_by="name", match_value=e["name"])
            batch.append(entry)
            tag += 1
        report = sender.send(f"c{n}", 2, batch)
        assert len(report.results) == len(batch)
        ids = {r["id"] for r in service.records}
        creators = {r["id"]: r["creator"] for r in service.records}
        for entry, result in zip(batch, report.results, strict=True):
            assert result.status in {
                RowStatus.CREATED,
                RowStatus.UPDATED,
                RowStatus.FAILED,
                RowStatus.IN_DOUBT,
            }
            if result.status in (RowStatus.CREATED, RowStatus.UPDATED):
                assert result.record_id in ids
                if not entry["fields"]["may_match"]:  # its own record, not another entry's
                    assert creators[result.record_id] == entry["fields"]["tag"]
            else:
                assert result.error
    assert all(count == 1 for count in service.created_by.values()), service.created_by
    assert service.hijacked == []
