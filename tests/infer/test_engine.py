"""Column → field inference: names first, values as the referee, one column per field."""

from __future__ import annotations

from typing import Any

from recordsync.infer.engine import infer
from recordsync.validate.schema import Schema

SCHEMA: list[dict[str, Any]] = [
    {
        "slug": "contacts",
        "singular_slug": "contact",
        "fields": [
            {"field_name": "email", "field_type": "email"},
            {"field_name": "lead_score", "field_type": "number", "display_name": "Lead score"},
            {"field_name": "last_contacted", "field_type": "date"},
            {"field_name": "newsletter_opt_in", "field_type": "boolean"},
            {
                "field_name": "lifecycle_stage",
                "field_type": "select",
                "select_options": [
                    {"label": "Lead", "value": "lead"},
                    {"label": "Customer", "value": "customer"},
                ],
            },
            {"field_name": "region", "field_type": "text", "is_required": True},
        ],
    }
]
USERS = [{"id": "u1", "email": "ada@acme.example", "full_name": "Ada Lovelace"}]


def run(columns: dict[str, list[str]]) -> Any:
    otype = Schema.from_api(SCHEMA).object_type("contacts")
    assert otype is not None
    return infer(list(columns), columns, otype, USERS)


def test_a_header_naming_a_field_whose_type_the_values_do_not_fit_is_left_unmapped() -> None:
    prop = run(
        {
            "Name": ["Ann", "Bob"],
            "Email": ["not an address", "nope"],
            "Lead Score": ["high", "low"],
            "Newsletter": ["maybe", "perhaps"],
        }
    )
    assert prop.as_dict() == {"name": "Name"}
    why = dict(prop.unmapped)
    assert why["Email"] == "named like 'email' but its values do not fit a email field"
    assert "number field" in why["Lead Score"]


def test_values_alone_map_only_distinctive_types_and_owners_are_found_by_users() -> None:
    prop = run(
        {
            "First": ["Ann", "Bob"],
            "Surname": ["Lee", "Moss"],
            "Primary Contact": ["ann@x.example", "bob@y.example"],
            "Phase": ["Lead", "customer"],
            "Points": ["10", "20"],
            "Rep": ["Ada Lovelace", "ada lovelace"],
        }
    )
    assert prop.name == {"template": "{First} {Surname}"}
    assert prop.as_dict() == {
        "name": "{First} {Surname}",
        "email": "Primary Contact",  # e-mail: the one field of that type
        "lifecycle_stage": "Phase",  # every value is an option
        "owner": "Rep",
    }
    assert ("Points", "no field matches its name") in prop.unmapped  # numbers: ambiguous
    assert prop.match_by == ["email"]
    assert prop.missing_required == ["region"]


def test_dates_carry_their_format_and_an_ambiguous_one_is_warned_about() -> None:
    prop = run({"Name": ["A"], "Last Contacted": ["03/04/2024", "05/06/2024"]})
    (choice,) = prop.fields
    assert choice.options == {"date_format": "%d/%m/%Y"}
    assert "ambiguous" in prop.warnings[0] and "'Last Contacted'" in prop.warnings[0]


def test_without_a_name_column_name_is_required() -> None:
    prop = run({"Email": ["a@x.example"]})
    assert prop.name is None and prop.missing_required[0] == "name"


def test_a_select_gets_a_value_map_only_for_confident_spellings_of_its_options() -> None:
    prop = run({"Name": ["A"], "Stage": ["Lead", "Custmer", "customer", "Prospect"]})
    (choice,) = prop.fields
    assert choice.field == "lifecycle_stage"
    assert choice.options == {"value_map": {"Custmer": "customer"}}  # never 'Prospect'


def test_a_column_named_like_a_field_is_not_taken_for_the_owner() -> None:
    colleagues = run({"Name": ["Ada"], "Email": ["ada@acme.example"]})  # users' own e-mails
    assert colleagues.as_dict() == {"name": "Name", "email": "Email"}
    assert run({"Name": ["Ada"], "Rep": ["ada@acme.example"]}).as_dict()["owner"] == "Rep"
    blank = run({"Name": ["Ada"], "Lead Score": ["", " "], "Points": ["", ""]})
    assert blank.unmapped == [("Points", "no field matches its name")]
    (score,) = blank.fields  # named outright: mapped, at low confidence, with a warning
    assert (score.field, score.confidence) == ("lead_score", "low")
    assert "all blank" in blank.warnings[0] and "'Lead Score'" in blank.warnings[0]
