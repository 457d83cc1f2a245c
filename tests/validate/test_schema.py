"""Schema.from_api and config-level checks of a mapping against it."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordsync.config import load_mapping
from recordsync.core.errors import ConfigError
from recordsync.validate import Schema, check_mapping


def test_seed_schema_types_aliases_and_fields(schema: Schema) -> None:
    assert schema.slugs == ["companies", "contacts", "deals"]
    deals = schema.object_type("deal")
    assert deals is not None and deals.slug == "deals"
    assert schema.object_type("contact") is schema.object_type("contacts")
    stage = deals.fields["stage"]
    assert stage.required and stage.type == "select"
    assert [o.value for o in stage.options][:2] == ["prospecting", "proposal"]
    assert deals.fields["amount"].decimal_places == 2
    assert deals.fields["probability"].decimal_places == 0
    assert schema.types["contacts"].fields["tags"].allow_multiple


def test_system_fields_are_known_even_when_the_schema_omits_them() -> None:
    s = Schema.from_api(
        {
            "data": [
                {"id": 1, "slug": "contacts", "fields": []},
                {"id": 2, "slug": "companies", "fields": []},
                {
                    "id": 9,
                    "slug": "tickets",
                    "fields": [{"field_name": "title", "field_type": "text"}],
                },
            ]
        }
    )
    assert s.types["contacts"].fields["email"].type == "email"
    assert s.types["companies"].fields["linkedin_url"].type == "url"
    assert s.types["companies"].fields["domain"].type == "text"
    assert s.types["tickets"].fields["owned_by_user_id"].type == "user"
    assert s.object_type("company") is not None


def _mapping(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "m.yaml"
    p.write_text("source:\n  path: x.csv\nname: Name\n" + body)
    return p


def test_unknown_object_type_names_file_line_and_suggests(tmp_path: Path, schema: Schema) -> None:
    m = load_mapping(_mapping(tmp_path, "object_type: deels\n"))
    with pytest.raises(ConfigError) as err:
        check_mapping(m, schema)
    assert err.value.line == 4 and err.value.key == "object_type"
    assert "deels" in str(err.value) and "did you mean 'deals'" in str(err.value)


def test_unknown_field_names_file_line_and_key(tmp_path: Path, schema: Schema) -> None:
    m = load_mapping(_mapping(tmp_path, "object_type: deal\nfields:\n  stage: S\n  amout: A\n"))
    with pytest.raises(ConfigError) as err:
        check_mapping(m, schema)
    assert err.value.line == 7 and err.value.key == "fields.amout"
    assert str(tmp_path / "m.yaml") in str(err.value)
    assert "did you mean 'amount'" in str(err.value)


def test_required_field_unmapped_and_email_rule_on_companies(
    tmp_path: Path, schema: Schema
) -> None:
    m = load_mapping(_mapping(tmp_path, "object_type: deals\nfields:\n  amount: A\n"))
    with pytest.raises(ConfigError, match=r"required field.*stage"):
        check_mapping(m, schema)
    m = load_mapping(
        _mapping(tmp_path, "object_type: companies\nmatch_by:\n  - by: email\n    column: E\n")
    )
    with pytest.raises(ConfigError, match="only for contacts") as err:
        check_mapping(m, schema)
    assert err.value.line == 6


def test_options_that_do_not_fit_the_field_type(tmp_path: Path, schema: Schema) -> None:
    body = "object_type: contacts\nfields:\n  job_title:\n    column: T\n    date_format: '%d'\n"
    m = load_mapping(_mapping(tmp_path, body))
    with pytest.raises(ConfigError, match="applies to date and datetime fields") as err:
        check_mapping(m, schema)
    assert err.value.line == 8 and err.value.key == "fields.job_title.date_format"
    m = load_mapping(
        _mapping(
            tmp_path,
            "object_type: contacts\nfields:\n  lifecycle_stage:\n    column: S\n    split: ';'\n",
        )
    )
    with pytest.raises(ConfigError, match="'split' makes a list"):
        check_mapping(m, schema)
    m = load_mapping(
        _mapping(
            tmp_path,
            "object_type: contacts\nfields:\n  tags:\n"
            "    column: S\n    split: ';'\n  lead_score:\n    column: L\n"
            "    decimal_separator: ','\n",
        )
    )
    assert check_mapping(m, schema).slug == "contacts"


def test_transform_on_a_field_that_is_not_text_is_a_config_error(
    tmp_path: Path, schema: Schema
) -> None:
    m = load_mapping(
        _mapping(
            tmp_path,
            "object_type: companies\nfields:\n  domain: {column: W, transform: domain}\n"
            "  linkedin_url: {column: L, transform: url_domain}\n",
        )
    )
    with pytest.raises(ConfigError) as err:
        check_mapping(m, schema)
    assert err.value.key == "fields.linkedin_url.transform"
    assert "gives a domain" in str(err.value) and "'linkedin_url' is a url field" in str(err.value)
