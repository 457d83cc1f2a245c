"""Header names compared with field names (``recordsync.infer.names``)."""

from __future__ import annotations

from recordsync.infer.names import is_one_of, name_score, normalize


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
