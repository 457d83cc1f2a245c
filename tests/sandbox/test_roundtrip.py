"""Round trips (hypothesis): what a create or batch writes is what a read returns."""

from __future__ import annotations

from datetime import date
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.sandbox.app import SandboxApp

from .support import H, TestClient

USERS = [f"6f1c2a3b-000{i}-4000-8000-00000000000{i}" for i in range(1, 5)]
text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=30)
contact_fields = st.fixed_dictionaries(
    {},
    optional={
        "job_title": text,
        "lifecycle_stage": st.sampled_from(["lead", "qualified", "customer", "churned"]),
        "lead_score": st.integers(0, 100),
        "newsletter_opt_in": st.booleans(),
        "last_contacted": st.dates(date(1900, 1, 1), date(2100, 1, 1)).map(date.isoformat),
        "tags": st.lists(
            st.sampled_from(["vip", "partner", "churn-risk", "newsletter"]), unique=True
        ),
        "owned_by_user_id": st.sampled_from(USERS),
        "website": st.sampled_from(["https://a.example", "http://b.example/x?y=1"]),
    },
)
names = text.filter(lambda s: s != "")


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=names, fields=contact_fields)
def test_put_then_get_returns_what_was_written(
    app: SandboxApp, name: str, fields: dict[str, Any]
) -> None:
    client = TestClient(app, headers=H)
    r = client.put("/api/objects/contacts", json={"name": name, "fields": fields})
    assert r.status_code == 200, r.text
    rec = client.get(f"/api/objects/contacts?id={r.json()['data']['id']}").json()["data"]
    assert rec["name"] == name
    for key, value in fields.items():
        assert rec[key] == value


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(entries=st.lists(st.tuples(names, contact_fields), min_size=1, max_size=10))
def test_batch_then_list_returns_what_was_written(
    app: SandboxApp, entries: list[tuple[str, dict[str, Any]]]
) -> None:
    client = TestClient(app, headers=H)
    objects = [{"name": n, "fields": f} for n, f in entries]
    results = client.post("/api/objects/contacts/batch", json={"objects": objects}).json()[
        "results"
    ]
    assert [x["status"] for x in results] == ["created"] * len(entries)
    for (name, fields), result in zip(entries, results, strict=True):
        rec = client.get(f"/api/objects/contacts?id={result['id']}").json()["data"]
        assert rec["name"] == name and all(rec[k] == v for k, v in fields.items())
