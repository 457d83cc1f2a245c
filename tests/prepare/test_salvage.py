"""Malformed lines as invalid rows, with every key they may still hold (mirror deletes keep
their records) or the reason none can be trusted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from recordsync.config.models import MappingConfig
from recordsync.core.model import PreparedRow, RowStatus
from recordsync.map.engine import BatchMapper
from recordsync.prepare.salvage import bad_row
from recordsync.read import BadLine


def mapper(text: str) -> BatchMapper:
    cfg = MappingConfig.model_validate(yaml.safe_load(text))
    return BatchMapper(cfg, base_dir=Path("."), schema=None, users=None)


MIRROR = "mirror_deletes: {enabled: true}\n"
CONTACTS = mapper(
    "object_type: contacts\nsource: {path: m.csv}\nname: Name\nmatch_by: [email]\n"
    "fields: {email: Email}\n" + MIRROR
)
COMPANIES = mapper(
    "object_type: companies\nsource: {path: c.csv, delimiter: ';'}\nname: Name\n"
    "match_by: [name]\nfields: {domain: Website}\n" + MIRROR
)


def row(text: str, m: BatchMapper = CONTACTS, **kw: Any) -> PreparedRow:
    columns = ["Name", "Email"] if m is CONTACTS else ["Name", "Website"]
    return bad_row(BadLine(7, text, "malformed line", **kw), "m.csv", columns, m)


def test_an_extra_delimiter_gives_every_key_the_line_may_hold() -> None:
    r = row("P,3,p3@m.example")
    assert r.status is RowStatus.INVALID and r.error == "line 7: malformed line"
    assert r.salvage is not None and r.salvage.hides is None
    assert "email:p3@m.example" in r.salvage.keys
    assert r.source.values["_extra_cells"] == ["p3@m.example"]


def test_a_key_split_by_its_own_delimiter_is_joined_again() -> None:
    r = row("Acme; Inc;acme.example", COMPANIES)
    assert r.salvage is not None and "name:Acme; Inc" in r.salvage.keys


def test_cells_too_few_or_far_too_many_hide_the_key() -> None:
    short = row("P3p3@m.example")
    assert short.salvage is not None and short.salvage.hides is not None
    assert "a delimiter is missing" in short.salvage.hides
    joined = row("P3,p3@m.example,P4,p4@m.example")
    assert joined.salvage is not None and "more than one row" in str(joined.salvage.hides)


def test_a_line_that_swallowed_others_hides_rows() -> None:
    r = row("P3,p3@m.example", hides="a quoted field that starts at line 7 swallowed 9 lines")
    assert r.salvage is not None and r.salvage.hides is not None and r.salvage.keys == []


def test_a_cell_over_the_csv_modules_limit_is_reported_not_raised() -> None:
    r = row('"' + "x" * (200 << 10) + ",p3@m.example")
    assert r.status is RowStatus.INVALID and r.error is not None
    assert r.error.startswith("line 7: malformed line; its cells cannot be split")
    assert r.salvage is not None and r.salvage.hides is not None


def test_without_mirror_deletes_no_keys_are_worked_out() -> None:
    plain = mapper(
        "object_type: contacts\nsource: {path: m.csv}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email}\n"
    )
    r = bad_row(BadLine(7, "P,3,p3@m.example", "malformed line"), "m.csv", ["Name", "Email"], plain)
    assert r.status is RowStatus.INVALID and r.salvage is None
    assert r.source.values == {"Name": "P", "Email": "3", "_extra_cells": ["p3@m.example"]}


def test_a_key_with_an_unreadable_character_hides_the_key() -> None:
    """A byte the source's encoding does not define reaches the cells as U+FFFD: a key
    holding it is not the key the export meant (its record must not be deleted)."""
    r = row("Ben,b\ufffden@m.example")
    assert r.salvage is not None and (r.salvage.alignments, r.salvage.keys) == ([], [])
    assert r.salvage.hides == "line 7: its match key holds a character that could not be read"
    elsewhere = row("B\ufffden,ben@m.example")  # not in the key: the key is read as usual
    assert elsewhere.salvage is not None and elsewhere.salvage.hides is None
    assert elsewhere.salvage.keys == ["email:ben@m.example"]
