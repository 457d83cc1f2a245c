"""Column → field inference: names first, values as the referee, one column per field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

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


SEED = Path(__file__).resolve().parents[2] / "src" / "recordsync" / "sandbox" / "seed.yaml"


def seeded(columns: dict[str, list[str]], slug: str, users: list[dict[str, Any]] = USERS) -> Any:
    """The proposal for ``columns`` as ``slug`` of the seed's schema (ids as the sandbox
    gives them: in the order the types are listed)."""
    raw = yaml.safe_load(SEED.read_text(encoding="utf-8"))["object_types"]
    api = [{**t, "id": i} for i, t in enumerate(raw, start=1)]
    schema = Schema.from_api(api)
    otype = schema.object_type(slug)
    assert otype is not None
    displays = {f["field_name"]: f["display_name"] for t in api if t["slug"] == slug
                for f in t["fields"]}
    return infer(list(columns), columns, otype, users, displays=displays, schema=schema)


def test_an_uppercase_export_with_joined_headers_and_a_typo_maps_without_an_edit() -> None:
    prop = seeded(
        {
            "CUSTOMERID": ["DD37Cf93aecA6Dc", "1Ef7b82A4CAAD10", "6F94879bDAfE5a6"],
            "FIRSNAME": ["Sheryl", "Preston", "Roy"],
            "LASTNAME": ["Baxter", "Lozano", "Berry"],
            "COMPANY": ["Rasmussen Group", "Vega-Gentry", "Murillo-Perry"],
            "PHONE1": ["229.077.5154", "5153435776", "+1-539-402-0259"],
            "PHONE2": ["397.884.0519x718", "686-620-1820x944", "(496)978-3969x58947"],
            "EMAIL": ["zunigavanessa@smith.info", "vmata@colon.com", "beckycarr@hogan.com"],
            "SUBSCRIPTIONDATE": ["2020-08-24", "2021-04-23", "2020-03-25"],
            "WEBSITE": ["http://www.stephenson.com/", "http://www.hobbs.com/", "http://ww.x.com/"],
        },
        "contacts",
    )
    assert prop.name == {"template": "{FIRSNAME} {LASTNAME}"}
    assert prop.ledger_key == "CUSTOMERID"
    assert prop.as_dict() == {
        "name": "{FIRSNAME} {LASTNAME}",
        "phone": "PHONE1",  # the first of the numbered copies
        "email": "EMAIL",
        "signed_up_at": "SUBSCRIPTIONDATE",
        "website": "WEBSITE",
    }
    (ref,) = prop.refs
    assert (ref.field, ref.column, ref.options) == (
        "company_id", "COMPANY", {"ref": {"step": "companies", "by": "name"}}
    )
    assert [c for c, _why in prop.unmapped] == ["COMPANY", "PHONE2"]  # each named, with why
    assert "a reference to companies" in dict(prop.unmapped)["COMPANY"]
    assert prop.missing_required == []


def test_references_by_domain_and_by_key_and_the_own_key_is_never_a_reference() -> None:
    deals = seeded(
        {
            "orderID": ["10248", "10249", "10250"],
            "customerID": ["VINET", "TOMSP", "VINET"],
            "orderDate": ["1996-07-04 00:00:00.000", "1996-07-05 00:00:00.000", "NULL"],
            "shipRegion": ["NULL", "NULL", "RJ"],
        },
        "deals",
    )
    assert deals.ledger_key == "orderID" and deals.null_values == ["NULL"]
    assert [(r.column, r.options["ref"]) for r in deals.refs] == [
        ("customerID", {"step": "companies"})  # by the companies step's own key
    ]
    (close,) = deals.fields  # SQL Server's midnight date-times into a date field
    assert (close.field, close.options) == ("close_date", {"date_format": "%Y-%m-%d %H:%M:%S.%f"})
    contacts = seeded(
        {
            "customer_id": ["1", "2", "3"],  # a contacts export's customer id is its own
            "Email": ["a@x.example", "b@y.example", "c@z.example"],
            "Related Company Domain": ["x.example", "y.example", "z.example"],
        },
        "contacts",
    )
    assert contacts.ledger_key == "customer_id"
    assert [(r.column, r.options["ref"]["by"]) for r in contacts.refs] == [
        ("Related Company Domain", "domain")
    ]
    repeated = seeded({"Name": ["A", "B"], "Account ID": ["7", "7"]}, "contacts")
    assert repeated.ledger_key is None  # not all different: not this export's key
    assert [r.column for r in repeated.refs] == ["Account ID"]


def test_shared_owner_names_are_warned_with_their_candidates() -> None:
    users = [
        *USERS,
        {"id": "u2", "email": "ben@acme.example", "full_name": "Ben Carter"},
        {"id": "u3", "email": "ben.c@acme.example", "full_name": "Ben Carter"},
    ]
    prop = seeded(
        {"Name": ["A", "B", "C"], "Owner": ["Ada Lovelace", "Ben Carter", "ben carter"]},
        "contacts",
        users,
    )
    assert prop.owner is not None and prop.owner.column == "Owner"
    (warning,) = prop.warnings
    assert "'Ben Carter' (2 sampled rows) fits 2 users: ben.c@acme.example, ben@acme.example" in (
        warning
    )
    assert "owners file" in warning


def test_a_site_column_without_sites_is_no_domain_and_null_cells_are_no_values() -> None:
    prop = seeded(
        {
            "companyName": ["Exotic Liquids", "Tokyo Traders", "Pavlova"],
            "homePage": ["NULL", "#CAJUN.HTM#", "Mayumi's (on the World Wide Web)#http://x/#"],
            "phone": ["(171) 555-2222", "NULL", "(03) 444-2343"],
        },
        "companies",
    )
    assert prop.as_dict() == {"name": "companyName", "phone": "phone"}
    assert dict(prop.unmapped)["homePage"] == (
        "named like 'domain' but its values are not sites, domains or e-mails"
    )
