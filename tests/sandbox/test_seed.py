"""The seed file: strict parsing, the default seed's content, ids, and the schema answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.config.support import BOMB

from recordsync.core.errors import ConfigError
from recordsync.sandbox.catalog import Catalog
from recordsync.sandbox.seed import FIELD_KEYS, default_seed_path, load_seed

REPO_SEED = Path(__file__).resolve().parents[2] / "sample_data" / "seed.yaml"


def test_packaged_default_seed_is_identical_to_sample_data() -> None:
    assert default_seed_path().read_bytes() == REPO_SEED.read_bytes()


def test_default_seed_content() -> None:
    seed = load_seed()
    assert seed.type_ids() == {"contacts": 1, "companies": 2, "deals": 3}
    users = {str(u.id): (u.full_name, u.access_level, u.email) for u in seed.users}
    assert users == {
        "6f1c2a3b-0001-4000-8000-000000000001": ("Ada Lovelace", "admin", "ada@acme.example"),
        "6f1c2a3b-0002-4000-8000-000000000002": ("Ben Carter", "member", "ben@acme.example"),
        "6f1c2a3b-0003-4000-8000-000000000003": ("Chloe Nguyen", "member", "chloe@acme.example"),
        "6f1c2a3b-0004-4000-8000-000000000004": ("Diego Ramos", "admin", "diego@acme.example"),
    }
    catalog = Catalog(seed)
    contacts = catalog.types[1].fields
    assert list(contacts) == [
        "email",
        "phone",
        "owned_by_user_id",
        "job_title",
        "lifecycle_stage",
        "lead_score",
        "newsletter_opt_in",
        "last_contacted",
        "company_id",
        "tags",
        "website",
        "signed_up_at",
    ]
    assert contacts["tags"].options == ("vip", "partner", "churn-risk", "newsletter")
    assert contacts["tags"].definition.allow_multiple is True
    deals = catalog.types[3]
    assert deals.kind == "deal" and deals.fields["stage"].definition.is_required
    assert deals.fields["probability"].type == "percentage"
    assert catalog.resolve("deal") is deals and catalog.resolve("company") is catalog.types[2]
    assert {str(s.id): s.status for s in seed.skills} == {
        "00000000-0000-4000-8000-000000000001": "live",
        "00000000-0000-4000-8000-000000000002": "paused",
    }


def test_schema_answer_lists_all_18_keys() -> None:
    answer = Catalog(load_seed()).schema_answer["data"]
    assert [t["id"] for t in answer] == [1, 2, 3]
    for t in answer:
        for f in t["fields"]:
            assert tuple(f) == FIELD_KEYS
    stage = next(f for f in answer[2]["fields"] if f["field_name"] == "stage")
    assert stage["select_options"][3] == {
        "label": "Won",
        "value": "won",
        "color": "#10B981",
        "order": 3,
    }
    assert stage["number_min"] is None and stage["related_object_type_id"] is None


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "seed.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_unknown_key_is_an_error_naming_key_and_line(tmp_path: Path) -> None:
    text = REPO_SEED.read_text(encoding="utf-8").replace(
        "        field_type: phone\n", "        field_type: phone\n        colour: red\n", 1
    )
    with pytest.raises(ConfigError) as info:
        load_seed(_write(tmp_path, text))
    err = info.value
    assert err.key == "object_types.0.fields.1.colour"
    assert err.line is not None and text.splitlines()[err.line - 1].strip() == "colour: red"
    assert "unknown key" in str(err)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("object_types: []\n", "must include 'contacts'"),
        ("- a\n", "must be a YAML mapping"),
        ("object_types: [\n", "invalid YAML"),
        (BOMB, "refused as an alias bomb"),
    ],
)
def test_bad_seed_files(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        load_seed(_write(tmp_path, text))


def test_missing_seed_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read seed file"):
        load_seed(tmp_path / "nope.yaml")
