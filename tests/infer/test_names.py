"""Header names compared with field names (``recordsync.infer.names``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.infer.names import (
    FIRST_NAMES,
    LAST_NAMES,
    is_one_of,
    key_of,
    name_score,
    normalize,
    one_typo_apart,
    reference_words,
)


def test_headers_are_normalised_words() -> None:
    assert normalize("E-mail Address") == "email address"
    assert normalize("Zip/Postal Code") == "zip postal code"
    assert normalize("leadScore") == "lead score"
    assert normalize("  Número_de  Teléfono ") == "numero de telefono"
    assert normalize("No. of Employees") == "number of employees"


def test_names_synonyms_and_camel_case_words() -> None:
    assert name_score("Lead Score", "lead_score", "Lead score", "contact")[0] == 1.0
    assert name_score("CONTACT_EMAIL", "email", "Email", "contact")[0] == 1.0
    assert name_score("Mobile Phone", "phone", "Phone", "contact")[0] == 0.9
    assert name_score("LinkedIn", "linkedin_url", "LinkedIn URL", "company")[0] == 0.9
    assert name_score("Person - Email", "email", "Email", "contact")[0] == 0.6
    assert name_score("Zip/Postal Code", "phone", "Phone", "contact")[0] == 0.0
    assert is_one_of("FirstName", ("first name",)) and not is_one_of("First", ("last",))


def test_joined_numbered_and_misspelt_headers_and_display_name_alternatives() -> None:
    assert name_score("PHONE1", "phone", "Phone", "contact")[0] == 0.95  # a numbered copy
    assert name_score("Phone 2", "phone", "Phone", "contact")[0] == 0.95
    assert name_score("JOBTITLE", "job_title", "Job title", "contact")[0] == 1.0
    assert name_score("SUBSCRIPTIONDATE", "signed_up_at", "Signed up at", "contact")[0] == 0.9
    assert name_score("Lead Scroe", "lead_score", "Lead score", "contact")[0] == 0.8  # swap
    assert name_score("region", "region", "State / Region", "contact")[0] == 1.0
    assert name_score("State", "region", "State / Region", "contact")[0] == 1.0
    assert is_one_of("LASTNAME", LAST_NAMES) and is_one_of("FIRSNAME", FIRST_NAMES)
    assert not is_one_of("FIRSNAME", FIRST_NAMES, close=False)
    assert not is_one_of("Firm", FIRST_NAMES)  # short names are too near each other to guess
    assert not is_one_of("Firm Name", FIRST_NAMES)


def test_id_columns_and_reference_words() -> None:
    assert key_of("CUSTOMERID") == "customer" and key_of("customerID") == "customer"
    assert key_of("order_id") == "order" and key_of("id") == "" and key_of("Record ID") == "record"
    assert key_of("Valid") is None and key_of("VALID") is None and key_of("Paid") is None
    assert reference_words("Related Company") == "company"
    assert reference_words("Associated Company Name") == "company name"


@settings(max_examples=200, deadline=None)
@given(st.text("abcdefgh ", min_size=0, max_size=12), st.text("abcdefgh ", max_size=12))
def test_a_close_spelling_is_symmetric_one_edit_and_never_the_same_name(a: str, b: str) -> None:
    assert one_typo_apart(a, b) == one_typo_apart(b, a)
    assert not one_typo_apart(a, a)
    if one_typo_apart(a, b):
        x, y = a.replace(" ", ""), b.replace(" ", "")
        assert min(len(x), len(y)) >= 7 and abs(len(x) - len(y)) <= 1 and x != y
