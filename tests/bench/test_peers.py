"""bench/peers.py: the peers' project files (the peers themselves run only in the benchmark,
from their own environment; nothing here installs them)."""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import yaml
from tests.bench.support import load


def test_the_drt_batch_template_renders_the_objects_the_service_takes() -> None:
    peers = load("peers")
    template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(
        peers.BATCH_TEMPLATE.replace("\n", " ")
    )
    rows = [
        {"first": 'Zoë "Z"', "last": "O'Neil", "email": "z@x.example", "phone": None,
         "title": "Data\\Engineer", "score": 7},
        {"first": "Ada", "last": "Li", "email": "a@x.example", "phone": "+44",
         "title": "", "score": None},
    ]  # fmt: skip
    body = json.loads(template.render(rows=rows))
    assert body["objects"][0] == {
        "name": 'Zoë "Z" O\'Neil',
        "match_by": "email",
        "match_value": "z@x.example",
        "fields": {"email": "z@x.example", "phone": None, "job_title": "Data\\Engineer",
                   "lead_score": 7},
    }  # fmt: skip
    assert body["objects"][1]["fields"]["lead_score"] is None
    assert [o["match_value"] for o in body["objects"]] == ["z@x.example", "a@x.example"]


def test_the_drt_project_posts_batches_of_100_to_the_given_url(tmp_path: Path) -> None:
    peers = load("peers")
    csv = tmp_path / "it's.csv"
    project = peers.drt_project(tmp_path, csv, "http://127.0.0.1:9", "sk_'key", 10_000)
    sync = yaml.safe_load((project / "syncs" / "contacts.yml").read_text(encoding="utf-8"))
    assert sync["destination"]["url"] == "http://127.0.0.1:9/api/objects/contacts/batch"
    assert sync["destination"]["headers"]["x-api-key"] == "sk_'key"
    assert sync["destination"]["max_records_per_request"] == 100
    assert sync["sync"]["batch_size"] == 10_000
    assert sync["sync"]["rate_limit"] == {"requests_per_second": 0}  # drt paces 10/s else
    assert f"read_csv('{csv}'" not in sync["model"]  # the quote in the path is escaped
    assert "read_csv('" + str(csv).replace("'", "''") + "'" in sync["model"]
    profiles = yaml.safe_load((tmp_path / "home" / ".drt" / "profiles.yml").read_text())
    assert profiles["bench"]["type"] == "duckdb"


def test_the_modelled_template_sends_the_fields_object_as_it_is() -> None:
    peers = load("peers")
    template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(
        peers.MODELLED_TEMPLATE.replace("\n", " ")
    )
    fields = {"email": "z@x.example", "tags": ["vip"], "lead_score": 7, "note": 'a "b"'}
    row = {"name": "Zoë O'Neil", "email": "z@x.example", "fields": json.dumps(fields)}
    body = json.loads(template.render(rows=[row, row]))
    one = {"name": "Zoë O'Neil", "match_by": "email", "match_value": "z@x.example"}
    assert body["objects"] == [{**one, "fields": fields}, {**one, "fields": fields}]
