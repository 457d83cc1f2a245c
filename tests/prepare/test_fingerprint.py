"""A step's fingerprint (recordsync.prepare.fingerprint): what the batch inputs are made by,
and nothing that only steers a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from recordsync.config.models import MappingConfig
from recordsync.prepare.fingerprint import step_fingerprint

BASE = """
object_type: contacts
source: {path: contacts.csv}
name: {template: "{first} {last}"}
match_by: [{by: email, column: email}]
fields:
  email: {column: email}
  phone: {column: phone}
ledger_key: {column: id}
"""

SCHEMA = [{"name": "email", "type": "email"}, {"name": "phone", "type": "text"}]


def fp(tmp_path: Path, **changes: Any) -> bytes | None:
    data = yaml.safe_load(BASE)
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        node = data
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    config = MappingConfig.model_validate(data)
    return step_fingerprint(config, tmp_path, SCHEMA, [])


@pytest.mark.parametrize(
    "changes",
    [
        # options at their defaults, written out or left out: the same mapping
        {"duplicates": "last"},
        {"merges": "hold"},
        {"source__delimiter": ","},
        {"mirror_deletes": {"enabled": False}},
        # options that steer the run only
        {"description": "the CRM's contacts, nightly"},
        {"source__batch_size": 1000},
        {"volume_guard": {"max_drop": "20%"}},
        {"verify": {"sample": 50}},
    ],
)
def test_settings_that_make_no_batch_input_keep_the_fingerprint(
    tmp_path: Path, changes: dict[str, Any]
) -> None:
    assert fp(tmp_path, **changes) == fp(tmp_path)


@pytest.mark.parametrize(
    "changes",
    [
        {"fields__phone": {"column": "mobile"}},
        {"source__delimiter": ";"},
        {"source__encoding": "cp1252"},
        {"source__null_values": ["N/A"]},
        {"duplicates": "first"},
        {"merges": "expected"},
        {"match_by": [{"by": "email", "column": "work_email"}]},
    ],
)
def test_settings_that_make_batch_inputs_change_the_fingerprint(
    tmp_path: Path, changes: dict[str, Any]
) -> None:
    assert fp(tmp_path, **changes) != fp(tmp_path)


def test_the_schema_and_the_users_are_in_the_fingerprint(tmp_path: Path) -> None:
    config = MappingConfig.model_validate(yaml.safe_load(BASE))
    base = step_fingerprint(config, tmp_path, SCHEMA, [])
    assert step_fingerprint(config, tmp_path, [*SCHEMA, {"name": "x", "type": "text"}], []) != base
    assert step_fingerprint(config, tmp_path, SCHEMA, [{"id": 1, "email": "a@x.io"}]) != base
    assert step_fingerprint(config, tmp_path, None, []) is None  # no schema: no fingerprint


def test_an_option_a_later_version_adds_at_its_default_keeps_the_fingerprint(
    tmp_path: Path,
) -> None:
    class Later(MappingConfig):
        a_new_option: int = 5

    data = yaml.safe_load(BASE)
    now = MappingConfig.model_validate(data)
    later = Later.model_validate(data)
    assert later.inputs_json() == now.inputs_json()
    assert step_fingerprint(later, tmp_path, SCHEMA, []) == step_fingerprint(
        now, tmp_path, SCHEMA, []
    )
    assert Later.model_validate({**data, "a_new_option": 6}).inputs_json() != now.inputs_json()
