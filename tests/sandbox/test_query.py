"""GET list: paging, search, sort, filters, include_deleted, bad parameters."""

from __future__ import annotations

import pytest

from .support import TestClient, created, delete


@pytest.fixture
def people(client: TestClient) -> list[int]:
    rows = [
        ("Ada", "ada@x.example", "customer", 90, True),
        ("Ben", "ben@y.example", "lead", 10, False),
        ("Chloe", "chloe@x.example", "customer", 50, False),
        ("dan_%", "d@z.example", "churned", 0, True),
    ]
    return [
        created(
            client, "contacts", n, email=e, lifecycle_stage=s, lead_score=sc, newsletter_opt_in=nl
        )["id"]
        for n, e, s, sc, nl in rows
    ]


def names(client: TestClient, query: str) -> list[str]:
    r = client.get(f"/api/objects/contacts?{query}")
    assert r.status_code == 200, r.text
    return [x["name"] for x in r.json()["data"]]


def test_paging(client: TestClient, people: list[int]) -> None:
    r = client.get("/api/objects/contacts?limit=2&offset=1").json()
    assert [x["id"] for x in r["data"]] == people[1:3]
    assert r["pagination"] == {"total": 4, "limit": 2, "offset": 1, "has_more": True}
    r = client.get("/api/objects/contacts?limit=2&offset=2").json()
    assert r["pagination"]["has_more"] is False
    r = client.get("/api/objects/contacts?offset=99999999999999999999999999").json()
    assert r["data"] == [] and r["pagination"]["total"] == 4
    assert client.get("/api/objects/contacts").json()["pagination"]["limit"] == 50


def test_search_sort_and_filters(client: TestClient, people: list[int]) -> None:
    assert names(client, "search=CHLOE") == ["Chloe"]
    assert names(client, "search=x.example") == ["Ada", "Chloe"]  # email too, for contacts
    assert names(client, "search=_%") == ["dan_%"]  # LIKE wildcards are literal
    assert names(client, "sort_by=lead_score&sort_order=desc") == ["Ada", "Chloe", "Ben", "dan_%"]
    assert names(client, "sort_by=name&sort_order=desc")[0] == "dan_%"
    assert names(client, "filter[lifecycle_stage]=CUST") == ["Ada", "Chloe"]
    assert names(client, "filter[lifecycle_stage]=customer&filter[email]=chloe") == ["Chloe"]
    assert names(client, "filter[newsletter_opt_in]=true") == ["Ada", "dan_%"]
    assert names(client, "include_all_fields=true&include_summary=1") == [
        "Ada",
        "Ben",
        "Chloe",
        "dan_%",
    ]


@pytest.mark.parametrize(
    ("query", "fragment"),
    [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=abc", "limit"),
        ("offset=-1", "offset"),
        ("offset=x", "offset"),
        ("sort_by=colour", "colour"),
        ("sort_order=up", "sort_order"),
        ("filter[colour]=1", "filter[colour]"),
        ("include_deleted=maybe", "include_deleted"),
        ("filter[newsletter_opt_in]=perhaps", "newsletter_opt_in"),
    ],
)
def test_bad_parameters_are_400(client: TestClient, query: str, fragment: str) -> None:
    r = client.get(f"/api/objects/contacts?{query}")
    assert r.status_code == 400
    assert r.json()["error"].startswith("Validation failed: ") and fragment in r.json()["error"]


def test_include_deleted(client: TestClient, people: list[int]) -> None:
    delete(client, "contacts", {"id": people[0]})
    live = client.get("/api/objects/contacts").json()
    assert live["pagination"]["total"] == 3 and "deleted_at" not in live["data"][0]
    every = client.get("/api/objects/contacts?include_deleted=true").json()["data"]
    assert [x["deleted_at"] is not None for x in every] == [True, False, False, False]


def test_list_is_per_type(client: TestClient, people: list[int]) -> None:
    created(client, "companies", "Acme")
    assert client.get("/api/objects/companies").json()["pagination"]["total"] == 1
    assert names(client, "search=acme") == []
