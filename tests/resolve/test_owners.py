"""Owner e-mails → user ids: users listing, owners file, policies for unknown owners."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from recordsync.config import OwnerConfig
from recordsync.core.errors import ConfigError
from recordsync.resolve import OwnerResolver, load_owners_file

ADA, BEN = "6f1c2a3b-0001-4000-8000-000000000001", "6f1c2a3b-0002-4000-8000-000000000002"
USERS = [
    {"id": ADA, "full_name": "Ada Lovelace", "access_level": "admin", "email": "ada@acme.example"},
    {"id": BEN, "full_name": "Ben Carter", "access_level": "member", "email": "ben@acme.example"},
]
HOSTED = [{k: v for k, v in u.items() if k != "email"} for u in USERS]  # no e-mails


def resolve(
    cfg: OwnerConfig,
    users: list[dict[str, Any]] | None,
    values: list[str | None],
    base: Path = Path("."),
) -> list[Any]:
    res, reasons, _ = OwnerResolver(cfg, users, base).resolve(pa.array(values, pa.string()))
    return list(zip(res, reasons or [None] * len(values), strict=True))


def test_users_email_trimmed_and_case_insensitive() -> None:
    out = resolve(OwnerConfig(column="o"), USERS, ["  ADA@acme.example ", "ben@acme.example"])
    assert out == [((ADA, "users:email"), None), ((BEN, "users:email"), None)]


def test_unknown_owner_policies(tmp_path: Path) -> None:
    [(res, reason)] = resolve(OwnerConfig(column="o"), USERS, ["zed@acme.example"])
    assert res == (None, "unknown") and reason is not None and "not a known owner" in reason
    [(res, reason)] = resolve(OwnerConfig(column="o", on_unknown="unowned"), USERS, ["zed@x"])
    assert res == (None, "unowned") and reason is None
    cfg = OwnerConfig(column="o", on_unknown="default", default="Ben@acme.example")
    assert resolve(cfg, USERS, ["zed@x"]) == [((BEN, "default"), None)]


def test_unknown_default_owner_is_a_config_error() -> None:
    cfg = OwnerConfig(column="o", on_unknown="default", default="nobody@acme.example")
    with pytest.raises(ConfigError, match=r"owner\.default"):
        OwnerResolver(cfg, USERS, Path("."))


def test_owners_file_yaml_with_names_when_listing_has_no_emails(tmp_path: Path) -> None:
    (tmp_path / "owners.yaml").write_text(
        f"Ada@acme.example: Ada Lovelace\nben@acme.example: {BEN}\n"
    )
    cfg = OwnerConfig(column="o", owners_file="owners.yaml")
    out = resolve(cfg, HOSTED, ["ada@ACME.example", "ben@acme.example", "Ada Lovelace"], tmp_path)
    assert [r for r, _ in out] == [(ADA, "owners_file"), (BEN, "owners_file"), (ADA, "users:name")]


def test_owners_file_csv_with_header(tmp_path: Path) -> None:
    (tmp_path / "owners.csv").write_text("email,user\nada@acme.example,Ada Lovelace\n")
    assert load_owners_file(tmp_path / "owners.csv") == {"ada@acme.example": "Ada Lovelace"}
    with pytest.raises(ConfigError, match="cannot read owners file"):
        load_owners_file(tmp_path / "missing.csv")


def test_suggestion_for_a_near_miss() -> None:
    r = OwnerResolver(OwnerConfig(column="o"), USERS, Path("."))
    _, _, hints = r.resolve(pa.array(["ada@acme.exmple", "Ada.Lovelace@acme.example"]))
    where = "an owners file (create one and name it with owner.owners_file in the mapping)"
    assert hints == [{where: {"ada@acme.exmple": ADA}}, None]


def test_suggestion_names_the_configured_owners_file(tmp_path: Path) -> None:
    (tmp_path / "owners.yaml").write_text("ada.lovelace@acme.example: Ada Lovelace\n")
    cfg = OwnerConfig(column="o", owners_file="owners.yaml")
    r = OwnerResolver(cfg, USERS, tmp_path)
    _, _, hints = r.resolve(pa.array(["ada.lovelase@acme.example"]))
    assert hints == [
        {"owners file owners.yaml (named by owner.owners_file)": {"ada.lovelase@acme.example": ADA}}
    ]


@pytest.mark.parametrize(
    "raw",
    [
        "zoe@acme.example",  # close to chloe@ by spelling only: someone else
        "bea@acme.example",  # one letter from ben@, still another person
        "ada@other.example",  # same local part, another company's domain
        "adam@acme.exmple",  # both parts differ
    ],
)
def test_no_suggestion_from_spelling_closeness_alone(raw: str) -> None:
    chloe = {"id": "c", "full_name": "Chloe Nguyen", "email": "chloe@acme.example"}
    r = OwnerResolver(OwnerConfig(column="o"), [*USERS, chloe], Path("."))
    ((found, reason),) = resolve(OwnerConfig(column="o"), [*USERS, chloe], [raw])
    _, _, hints = r.resolve(pa.array([raw]))
    assert found == (None, "unknown") and reason is not None
    assert hints is None


ANN1, ANN2 = "6f1c2a3b-0003-4000-8000-000000000003", "6f1c2a3b-0004-4000-8000-000000000004"
TWINS = [
    *USERS,
    {"id": ANN1, "full_name": "Ann Lee", "email": "ann.lee@acme.example"},
    {"id": ANN2, "full_name": "ann lee ", "email": "ann.lee@beta.example"},
]


def test_a_name_two_users_share_is_ambiguous_and_names_both() -> None:
    [(res, reason)] = resolve(OwnerConfig(column="o"), TWINS, ["Ann Lee"])
    assert res == (None, "ambiguous")
    assert reason is not None
    assert f"fits 2 users: ann.lee@acme.example (id {ANN1}), ann.lee@beta.example (id {ANN2})" in (
        reason
    )
    assert "owner.owners_file" in reason and "'ann lee: <user id>'" in reason


def test_ambiguous_is_a_row_error_whatever_on_unknown_says() -> None:
    for cfg in (
        OwnerConfig(column="o", on_unknown="unowned"),
        OwnerConfig(column="o", on_unknown="default", default="ben@acme.example"),
    ):
        [(res, reason)] = resolve(cfg, TWINS, ["ann lee"])
        assert res == (None, "ambiguous") and reason is not None


def test_a_name_pinned_in_the_owners_file_resolves(tmp_path: Path) -> None:
    (tmp_path / "owners.yaml").write_text(f"Ann Lee: {ANN2}\n")
    cfg = OwnerConfig(column="o", owners_file="owners.yaml")
    assert resolve(cfg, TWINS, ["ann lee"], tmp_path) == [((ANN2, "owners_file"), None)]


def test_an_owners_file_target_name_that_fits_two_users_is_ambiguous(tmp_path: Path) -> None:
    (tmp_path / "owners.yaml").write_text("ann@old.example: Ann Lee\n")
    cfg = OwnerConfig(column="o", owners_file="owners.yaml")
    [(res, reason)] = resolve(cfg, TWINS, ["ann@old.example"], tmp_path)
    assert res == (None, "ambiguous") and reason is not None
    assert "owners file owners.yaml maps it to 'Ann Lee'" in reason and ANN1 in reason


def test_an_email_two_users_share_is_ambiguous_unless_pinned(tmp_path: Path) -> None:
    users = [*USERS, {"id": "u9", "full_name": "Ada Two", "email": "ADA@acme.example"}]
    [(res, reason)] = resolve(OwnerConfig(column="o"), users, ["ada@acme.example"])
    assert res == (None, "ambiguous") and reason is not None and "id u9" in reason
    (tmp_path / "owners.yaml").write_text("ada@acme.example: u9\n")
    cfg = OwnerConfig(column="o", owners_file="owners.yaml")
    assert resolve(cfg, users, ["ada@acme.example"], tmp_path) == [((("u9", "owners_file")), None)]


def test_an_ambiguous_default_owner_is_a_config_error() -> None:
    cfg = OwnerConfig(column="o", on_unknown="default", default="Ann Lee")
    with pytest.raises(ConfigError, match=r"fits 2 users") as err:
        OwnerResolver(cfg, TWINS, Path("."))
    assert ANN1 in str(err.value) and ANN2 in str(err.value)


def test_resolve_rows_reports_ambiguous() -> None:
    r = OwnerResolver(OwnerConfig(column="o"), TWINS, Path("."))
    ids, hows, reasons, _ = r.resolve_rows(pa.array(["Ann Lee", "Ada Lovelace", None]))
    assert ids == [None, ADA, None]
    assert hows == ["ambiguous", "users:name", "blank"]
    assert reasons is not None and reasons[0] is not None and reasons[1] is None


def test_owners_csv_pinning_a_name_on_its_first_line_is_not_taken_for_a_header(
    tmp_path: Path,
) -> None:
    (tmp_path / "owners.csv").write_text(f"Ann Lee,{ANN2}\nben@acme.example,{BEN}\n")
    assert load_owners_file(tmp_path / "owners.csv") == {"ann lee": ANN2, "ben@acme.example": BEN}
    (tmp_path / "with-header.csv").write_text(f"owner,user id\nAnn Lee,{ANN2}\n")
    assert load_owners_file(tmp_path / "with-header.csv") == {"ann lee": ANN2}
