"""GET list and fetch-one."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from .conftest import create, delete, err


def listing(client: TestClient, object_type: str = "contacts", **params: Any) -> dict[str, Any]:
    response = client.get(f"/api/objects/{object_type}", params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"data", "pagination"}
    assert set(body["pagination"]) == {"total", "limit", "offset", "has_more"}
    assert isinstance(body["data"], list)
    return body


def names(body: dict[str, Any]) -> list[str]:
    return [r["name"] for r in body["data"]]


@pytest.fixture
def people(client: TestClient) -> TestClient:
    create(
        client,
        "contacts",
        "Carol",
        email="carol@alpha.example",
        job_title="Engineer",
        lifecycle_stage="customer",
    )
    create(
        client,
        "contacts",
        "alice",
        email="alice@beta.example",
        job_title="Senior engineer",
        lifecycle_stage="lead",
    )
    create(
        client,
        "contacts",
        "Bob",
        email="bob@alpha.example",
        job_title="Sales",
        lifecycle_stage="customer",
    )
    create(client, "contacts", "Dave Alphason", job_title="engineering manager")
    return client


def test_list_defaults(people: TestClient) -> None:
    body = listing(people)
    assert names(body) == ["Carol", "alice", "Bob", "Dave Alphason"]
    assert body["pagination"] == {"total": 4, "limit": 50, "offset": 0, "has_more": False}
    ids = [r["id"] for r in body["data"]]
    assert ids == sorted(ids)
    assert all("deleted_at" not in r for r in body["data"])


def test_list_pagination(people: TestClient) -> None:
    body = listing(people, limit=2)
    assert names(body) == ["Carol", "alice"]
    assert body["pagination"] == {"total": 4, "limit": 2, "offset": 0, "has_more": True}
    body = listing(people, limit=2, offset=2)
    assert names(body) == ["Bob", "Dave Alphason"]
    assert body["pagination"] == {"total": 4, "limit": 2, "offset": 2, "has_more": False}
    body = listing(people, limit=200, offset=3)
    assert names(body) == ["Dave Alphason"]
    assert body["pagination"]["limit"] == 200


def test_huge_offset_is_empty_page(people: TestClient) -> None:
    body = listing(people, offset=10**12)
    assert body["data"] == []
    assert body["pagination"]["total"] == 4
    assert body["pagination"]["has_more"] is False
    assert body["pagination"]["offset"] == 10**12


def test_search_name_and_email_case_insensitive(people: TestClient) -> None:
    assert names(listing(people, search="ALPHA")) == ["Carol", "Bob", "Dave Alphason"]
    assert names(listing(people, search="Ali")) == ["alice"]
    assert names(listing(people, search="zzz")) == []
    assert listing(people, search="ALPHA")["pagination"]["total"] == 3


def test_search_companies_by_name(client: TestClient) -> None:
    create(client, "companies", "Acme Widgets", domain="widgets.example")
    create(client, "companies", "Globex")
    assert names(listing(client, "companies", search="acme")) == ["Acme Widgets"]


def test_sort(people: TestClient) -> None:
    by_name = names(listing(people, sort_by="name"))
    everyone = ["Carol", "alice", "Bob", "Dave Alphason"]
    assert by_name in (sorted(everyone), sorted(everyone, key=str.lower))
    desc = names(listing(people, sort_by="name", sort_order="desc"))
    assert desc == list(reversed(by_name))
    ids = [r["id"] for r in listing(people, sort_order="desc")["data"]]
    assert ids == sorted(ids, reverse=True)


def test_filters_substring_case_insensitive_and_anded(people: TestClient) -> None:
    body = listing(people, **{"filter[job_title]": "ENGINEER"})
    assert names(body) == ["Carol", "alice", "Dave Alphason"]
    assert body["pagination"]["total"] == 3
    body = listing(people, **{"filter[job_title]": "engineer", "filter[lifecycle_stage]": "cust"})
    assert names(body) == ["Carol"]
    body = listing(people, **{"filter[email]": "alpha"})
    assert names(body) == ["Carol", "Bob"]


@pytest.mark.parametrize(
    ("params", "culprit"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"limit": "abc"}, "limit"),
        ({"limit": -5}, "limit"),
        ({"limit": "1.5"}, "limit"),
        ({"offset": -1}, "offset"),
        ({"offset": "x"}, "offset"),
        ({"sort_order": "up"}, "sort_order"),
        ({"sort_by": "shoe_size"}, "shoe_size"),
        ({"filter[shoe_size]": "44"}, "shoe_size"),
    ],
)
def test_bad_list_parameters(client: TestClient, params: dict[str, Any], culprit: str) -> None:
    response = client.get("/api/objects/contacts", params=params)
    assert response.status_code == 400
    assert culprit in err(response)


def test_include_deleted(client: TestClient) -> None:
    live = create(client, "contacts", "Live")
    gone = create(client, "contacts", "Gone")
    delete(client, "contacts", gone["id"])
    assert names(listing(client)) == ["Live"]
    assert listing(client)["pagination"]["total"] == 1
    body = listing(client, include_deleted="true")
    assert names(body) == ["Live", "Gone"]
    assert body["pagination"]["total"] == 2
    by_id = {r["id"]: r for r in body["data"]}
    assert by_id[live["id"]]["deleted_at"] is None
    assert by_id[gone["id"]]["deleted_at"].endswith("Z")


def test_fetch_one(client: TestClient) -> None:
    a = create(client, "contacts", "A", email="a@example.org")
    b = create(client, "contacts", "B", email="b@example.org")
    response = client.get("/api/objects/contacts", params={"id": a["id"]})
    assert response.status_code == 200
    assert response.json() == {"data": a}
    response = client.get("/api/objects/contacts", params={"email": "b@example.org"})
    assert response.json() == {"data": b}
    response = client.get("/api/objects/contacts", params={"id": a["id"], "email": "b@example.org"})
    assert response.json()["data"]["id"] == a["id"]


def test_fetch_one_errors(client: TestClient) -> None:
    record = create(client, "contacts", "A", email="a@example.org")
    company = create(client, "companies", "Acme")
    response = client.get("/api/objects/contacts", params={"id": "abc"})
    assert response.status_code == 400
    assert err(response) == "Validation failed: id: must be an integer"
    response = client.get("/api/objects/companies", params={"email": "a@example.org"})
    assert response.status_code == 400
    err(response)
    for params in ({"id": 999999}, {"email": "ghost@example.org"}, {"id": company["id"]}):
        response = client.get("/api/objects/contacts", params=params)
        assert response.status_code == 404, params
        assert err(response) == "Object not found"
    delete(client, "contacts", record["id"])
    for params in ({"id": record["id"]}, {"email": "a@example.org"}):
        response = client.get("/api/objects/contacts", params=params)
        assert response.status_code == 404
        assert err(response) == "Object not found"


def test_search_and_filters_fold_non_ascii_case(client: TestClient) -> None:
    create(client, "contacts", "Zoë Ærøe", email="z1@example.com", job_title="Straße Ingénieur")
    create(client, "contacts", "Zoe Plain", email="plain@example.com", job_title="Street")
    assert names(listing(client, search="ZOË")) == ["Zoë Ærøe"]
    assert names(listing(client, search="ærøe")) == ["Zoë Ærøe"]
    assert names(listing(client, **{"filter[job_title]": "INGÉNIEUR"})) == ["Zoë Ærøe"]
    # full case folding: ß folds to ss, as the name would be compared after case folding
    assert names(listing(client, **{"filter[job_title]": "STRASSE"})) == ["Zoë Ærøe"]
    assert names(listing(client, search="zoe")) == ["Zoe Plain"]  # accents are not folded


def test_like_wildcards_stay_literal(client: TestClient) -> None:
    create(client, "contacts", "dan_%", email="dan@example.com")
    create(client, "contacts", "daniel", email="daniel@example.com")
    assert names(listing(client, search="_%")) == ["dan_%"]
    assert names(listing(client, **{"filter[email]": "n_"})) == []


@pytest.mark.parametrize("param", ["search", "filter[name]", "filter[job_title]"])
def test_nul_in_search_or_filter_is_400(people: TestClient, param: str) -> None:
    response = people.get("/api/objects/contacts", params={param: "a\x00"})
    assert response.status_code == 400
    assert param in err(response)
    response = people.get("/api/objects/contacts", params={param: "\x00"})
    assert response.status_code == 400


def test_reference_to_deleted_record_is_empty_for_filters_and_sort(client: TestClient) -> None:
    gone = create(client, "companies", "Gone Co", domain="gone.example")
    kept = create(client, "companies", "Kept Co", domain="kept.example")
    a = create(client, "contacts", "A", email="a@example.com", company_id=gone["id"])
    b = create(client, "contacts", "B", email="b@example.com", company_id=kept["id"])
    c = create(client, "contacts", "C", email="c@example.com")
    key = "filter[company_id]"
    assert names(listing(client, **{key: str(gone["id"])})) == ["A"]
    delete(client, "companies", gone["id"])
    record = client.get("/api/objects/contacts", params={"id": a["id"]}).json()["data"]
    assert record["company_id"] is None
    assert names(listing(client, **{key: str(gone["id"])})) == []
    assert names(listing(client, **{key: str(kept["id"])})) == ["B"]
    # sorted as the records read: A's reference is empty now, like C's (nulls first, then id)
    body = listing(client, sort_by="company_id")
    assert [r["id"] for r in body["data"]] == [a["id"], c["id"], b["id"]]
    body = listing(client, sort_by="company_id", sort_order="desc")
    assert [r["id"] for r in body["data"]] == [b["id"], a["id"], c["id"]]


@pytest.mark.parametrize("offset", [10**12, 2**62, 2**63, 10**30])
def test_pagination_echoes_the_offset_asked_for(people: TestClient, offset: int) -> None:
    body = listing(people, offset=offset)
    assert body["data"] == []
    assert body["pagination"] == {"total": 4, "limit": 50, "offset": offset, "has_more": False}
