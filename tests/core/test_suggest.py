"""Suggested value maps and did-you-mean hints are offered only when they are right: near
pairs (typos, case, accents, punctuation, plurals, abbreviations) are offered, far pairs
(other industries, stages, countries) never are, whatever their spelling closeness."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.config import FieldSpec
from recordsync.core.suggest import confident, did_you_mean
from recordsync.validate import FieldDef, SelectOption, check_array

STAGES = ["lead", "qualified", "customer", "churned", "prospecting", "proposal", "negotiation"]
STAGES += ["closed_won", "closed_lost", "opportunity", "subscriber", "evangelist"]
INDUSTRIES = [
    "accounting", "airlines_aviation", "apparel_fashion", "architecture_planning", "automotive",
    "banking", "biotechnology", "broadcast_media", "chemicals", "civil_engineering",
    "computer_games", "computer_hardware", "computer_networking", "computer_software",
    "construction", "consumer_electronics", "consumer_goods", "defense_space", "education",
    "e_learning", "entertainment", "financial_services", "food_beverages", "government",
    "health_wellness_fitness", "higher_education", "hospital_health_care", "hospitality",
    "insurance", "internet", "investment_banking", "law_practice", "legal_services",
    "logistics_supply_chain", "marketing_advertising", "mechanical_engineering", "media",
    "medical_devices", "mining_metals", "nonprofit", "oil_energy", "pharmaceuticals",
    "real_estate", "renewables_environment", "research", "retail", "semiconductors",
    "staffing_recruiting", "telecommunications", "transportation", "utilities", "wholesale",
]  # fmt: skip
COUNTRIES = [
    "Argentina", "Australia", "Austria", "Belgium", "Bolivia", "Brazil", "Canada", "Chile",
    "China", "Colombia", "Costa Rica", "Croatia", "Czechia", "Denmark", "Dominica",
    "Dominican Republic", "Ecuador", "Egypt", "Estonia", "Finland", "France", "Gambia",
    "Georgia", "Germany", "Ghana", "Greece", "Guinea", "Guinea-Bissau", "Guyana", "Iceland",
    "India", "Indonesia", "Iran", "Iraq", "Ireland", "Israel", "Italy", "Jamaica", "Japan",
    "Latvia", "Lithuania", "Mali", "Malta", "Mexico", "Monaco", "Morocco", "Netherlands",
    "New Zealand", "Niger", "Nigeria", "North Korea", "Norway", "Oman", "Panama", "Paraguay",
    "Peru", "Poland", "Portugal", "Romania", "Samoa", "American Samoa", "Serbia", "Slovakia",
    "Slovenia", "South Africa", "South Korea", "South Sudan", "Spain", "Sudan", "Sweden",
    "Switzerland", "Taiwan", "Uganda", "United Kingdom", "United States", "Uruguay", "Zambia",
]  # fmt: skip

NEAR = [
    ("Custmer", STAGES, "customer"),
    ("Qualifed", STAGES, "qualified"),
    ("Customers", STAGES, "customer"),
    ("LEADS", STAGES, "lead"),
    ("Closed-Won", STAGES, "closed_won"),
    ("closed wonn", STAGES, "closed_won"),
    ("Negotation", STAGES, "negotiation"),
    ("Computer Software", INDUSTRIES, "computer_software"),
    ("Software, Computer", INDUSTRIES, "computer_software"),
    ("Marketing & Advertising", INDUSTRIES, "marketing_advertising"),
    ("Hospital and Health Care", INDUSTRIES, "hospital_health_care"),
    ("Pharmaceutical", INDUSTRIES, "pharmaceuticals"),
    ("Telecomunications", INDUSTRIES, "telecommunications"),
    ("Non-profit", INDUSTRIES, "nonprofit"),
    ("E-Learning", INDUSTRIES, "e_learning"),
    ("united states", COUNTRIES, "United States"),
    ("USA", COUNTRIES, "United States"),
    ("U.S.", COUNTRIES, "United States"),
    ("UK", COUNTRIES, "United Kingdom"),
    ("Germny", COUNTRIES, "Germany"),
    ("Switzerland ", COUNTRIES, "Switzerland"),
    ("Brasil", COUNTRIES, "Brazil"),
    ("Perú", COUNTRIES, "Peru"),
    ("Czechia.", COUNTRIES, "Czechia"),
    ("guinea bissau", COUNTRIES, "Guinea-Bissau"),
]

FAR = [
    ("Management Consulting", INDUSTRIES),  # was offered as "accounting" (score 0.52)
    ("Consulting", INDUSTRIES),
    ("Information Technology", INDUSTRIES),
    ("IT Services", INDUSTRIES),
    ("Banking & Finance", INDUSTRIES),
    ("Software", INDUSTRIES),
    ("Medicine", INDUSTRIES),
    ("Lead", [s for s in STAGES if s != "lead"]),
    ("Won", STAGES),
    ("Lost", STAGES),
    ("Unqualified", STAGES),
    ("Prospect", STAGES),
    ("Churn", STAGES),
    ("Closed", STAGES),
    ("Customer", [s for s in STAGES if s != "customer"]),
    ("Austria", [c for c in COUNTRIES if c != "Austria"]),
    ("Austrlia", COUNTRIES),  # one edit from Australia and from Austria: which?
    ("Korea", COUNTRIES),
    ("Congo", COUNTRIES),
    ("England", COUNTRIES),
    ("Holland", COUNTRIES),
    ("Samoa ", [c for c in COUNTRIES if c != "Samoa"]),
]


@pytest.mark.parametrize(("value", "options", "expected"), NEAR)
def test_near_pairs_are_offered(value: str, options: list[str], expected: str) -> None:
    assert confident(value, {o: o for o in options}) == expected


@pytest.mark.parametrize(("value", "options"), FAR)
def test_far_pairs_are_never_offered(value: str, options: list[str]) -> None:
    assert confident(value, {o: o for o in options}) is None


@pytest.mark.parametrize("options", [STAGES, INDUSTRIES, COUNTRIES], ids=["stages", "ind", "ctry"])
def test_no_option_is_ever_offered_for_another_option(options: list[str]) -> None:
    """Every option, missing from the list, suggests none of the others (Iran → Iraq,
    Gambia → Zambia, Slovakia → Slovenia, Niger → Nigeria, Mali → Malta, computer_games →
    computer_hardware, ...)."""
    offered = {}
    for value in options:
        rest = {o: o for o in options if o != value}
        hit = confident(value, rest)
        if hit is not None:
            offered[value] = hit
    assert offered == {}


def test_labels_and_values_lead_to_the_value() -> None:
    choices = {"closed_won": "closed_won", "Closed Won": "closed_won", "lead": "lead"}
    assert confident("Closed Wonn", choices) == "closed_won"


@given(
    st.sampled_from(COUNTRIES + INDUSTRIES + STAGES),
    st.lists(st.booleans(), min_size=40, max_size=40),
)
def test_a_choice_in_any_case_finds_itself(option: str, upper: list[bool]) -> None:
    cased = "".join(c.upper() if u else c.lower() for c, u in zip(option, upper * 2, strict=False))
    assert confident(cased, {o: o for o in COUNTRIES + INDUSTRIES + STAGES}) == option


def test_did_you_mean_for_config_keys() -> None:
    keys = ["decimal_separator", "thousands_separator", "date_format", "datetime_format"]
    assert did_you_mean("decimal_seperator", keys) == "decimal_separator"
    assert did_you_mean("date_fromat", keys) == "date_format"
    assert did_you_mean("format", keys) is None
    assert did_you_mean("separator", keys) is None  # two keys end so: which?
    assert did_you_mean("deels", ["contacts", "companies", "deals"]) == "deals"
    assert did_you_mean("deal", ["contacts", "companies", "deals"]) == "deals"
    assert did_you_mean("tickets", ["contacts", "companies", "deals"]) is None


def test_a_select_suggests_a_value_map_only_when_confident() -> None:
    industry = FieldDef(
        "industry",
        "select",
        options=tuple(SelectOption(v, v.replace("_", " ").title()) for v in INDUSTRIES),
    )
    values = ["Management Consulting", "Computer Sofware", "Accountng", "Consulting"]
    chk = check_array(pa.array(values), "select", industry, FieldSpec(column="c"), None)
    assert chk.reasons is not None and all(chk.reasons)
    assert chk.hints == [
        None,
        {"value_map": {"Computer Sofware": "computer_software"}},
        {"value_map": {"Accountng": "accounting"}},
        None,
    ]
