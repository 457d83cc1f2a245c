"""Config friction: columns named with their key's line and a did-you-mean, every unknown
field in one message, header names matched case-insensitively on request."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordsync.config import load_mapping
from recordsync.core.errors import ConfigError
from recordsync.prepare import check_source
from recordsync.validate.config_check import check_mapping
from recordsync.validate.schema import Schema

HEADER = "E-mail Address,First Name,Last Name,Lead Score\n"


def write(tmp_path: Path, body: str, csv: str = HEADER + "a@x.example,Ann,Lee,5\n") -> Path:
    (tmp_path / "leads.csv").write_text(csv, encoding="utf-8")
    (tmp_path / "m.yaml").write_text(
        "object_type: contacts\nsource: {path: leads.csv}\n" + body, encoding="utf-8"
    )
    return tmp_path / "m.yaml"


def test_every_missing_column_is_named_at_its_key_line_with_the_header_column_meant(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        "name:\n  template: '{First Name} {Lastname}'\n"
        "fields:\n  email: Email Address\n  lead_score: Leed Score\n  job_title: Title\n",
    )
    with pytest.raises(ConfigError) as err:
        check_source(load_mapping(path), tmp_path)
    text = str(err.value)
    assert err.value.line == 3  # the name, whose template names the first missing column
    name = f"{path}:3 [name]: column 'Lastname' is not in the header; did you mean 'Last Name'?"
    assert name in text
    assert f"{path}:6 [fields.email]: column 'Email Address' is not in the header; did you" in (
        text
    )
    assert "did you mean 'E-mail Address'?" in text
    assert f"{path}:7 [fields.lead_score]: column 'Leed Score' is not in the header; did you" in (
        text
    )
    assert f"{path}:8 [fields.job_title]: column 'Title' is not in the header\n" in text + "\n"


def test_every_unknown_field_is_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "name: First Name\nfields:\n  emial: E-mail Address\n  score: Lead Score\n"
        "  job_title: First Name\n  lead_scroe: Lead Score\n",
    )
    schema = Schema.from_api(
        [{"slug": "contacts", "fields": [{"field_name": "lead_score", "field_type": "number"},
                                         {"field_name": "job_title", "field_type": "text"}]}]
    )
    with pytest.raises(ConfigError) as err:
        check_mapping(load_mapping(path), schema)
    text = str(err.value)
    assert "3 unknown fields on contacts: 'emial', 'score', 'lead_scroe'" in text
    assert f"{path}:5 [fields.emial]: unknown field 'emial' (did you mean 'email'?)" in text
    assert f"{path}:6 [fields.score]: unknown field 'score'\n" in text
    assert f"{path}:8 [fields.lead_scroe]: unknown field 'lead_scroe' (did you mean" in text


def test_header_case_insensitive_matches_columns_in_any_case(tmp_path: Path) -> None:
    csv = "EMAIL , first name\nann@x.example,Ann\n"
    body = "name: First Name\nfields:\n  email: Email\n"
    with pytest.raises(ConfigError, match="header_case: insensitive"):
        check_source(load_mapping(write(tmp_path, body, csv)), tmp_path)
    path = write(tmp_path, body, csv)
    path.write_text(path.read_text().replace("{path: leads.csv}", "{path: leads.csv,"
                                             " header_case: insensitive}"), encoding="utf-8")
    mapping = load_mapping(path)
    assert check_source(mapping, tmp_path) == ["Email", "First Name"]
    from recordsync.prepare import prepare_step

    (row,) = prepare_step(mapping, base_dir=tmp_path, schema=None, users=None)
    assert row.payload["name"] == "Ann" and row.payload["fields"]["email"] == "ann@x.example"


def test_header_case_insensitive_refuses_two_names_that_fold_together(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "name: name\nfields: {}\n",
        "Name,NAME\nA,B\n",
    )
    path.write_text(path.read_text().replace("{path: leads.csv}", "{path: leads.csv,"
                                             " header_case: insensitive}"), encoding="utf-8")
    mapping = load_mapping(path)  # the header is read where the source is checked
    with pytest.raises(ConfigError, match="'Name', 'NAME' differ only in case") as err:
        check_source(mapping, tmp_path)
    assert (err.value.file, err.value.line, err.value.key) == (str(path), 2, "source.header_case")
    assert err.value.hint == "rename one in the file, or use header_case: exact"


def test_header_case_insensitive_is_refused_for_a_parquet_source_when_loaded(
    tmp_path: Path,
) -> None:
    (tmp_path / "m.yaml").write_text(
        "object_type: contacts\nsource: {path: leads.parquet, header_case: insensitive}\n"
        "name: name\nfields: {}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="applies to CSV sources") as err:
        load_mapping(tmp_path / "m.yaml")  # no file read: the option's own value is wrong
    assert (err.value.line, err.value.key) == (2, "source.header_case")


def test_validate_with_a_schema_reports_unknown_columns_and_fields_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from recordsync.cli import main

    path = write(tmp_path, "name: First Name\nfields:\n  emial: Email\n  phone: E-mail Address\n")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"data": [{"slug": "contacts", "fields": []}]}))
    with pytest.raises(SystemExit) as exit_:
        main(["validate", str(path), "--schema", str(schema)])
    out = capsys.readouterr().out
    assert exit_.value.code == 2
    assert f"{path}:5 [fields.emial]: column 'Email' is not in the header; did you mean" in out
    assert f"also: {path}:5 [fields.emial]: unknown field 'emial' on contacts" in out
