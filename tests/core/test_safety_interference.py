"""A maybe-applied chunk whose entries can touch each other's records is not resent by dedup."""

from recordsync.core.safety import chunk_interferes, rewrites_dedup_key


def _c(name: str, email: str | None = None, **extra: object) -> dict[str, object]:
    fields = {"email": email} if email else {}
    return {"name": name, "fields": fields, **extra}


def test_independent_entries_do_not_interfere() -> None:
    chunk = [_c("Ann", "a@x.io"), _c("Ann", "b@x.io"), _c("Bob")]
    assert not chunk_interferes("contacts", chunk)


def test_same_email_twice_interferes_case_insensitively() -> None:
    assert chunk_interferes("contacts", [_c("Cy", "c@x.io"), _c("Bob", " C@X.io ")])


def test_match_by_name_on_another_entrys_name_interferes() -> None:
    chunk = [_c("Ann"), _c("Ann", match_by="name", match_value="Ann")]
    assert chunk_interferes("deals", chunk)
    assert not chunk_interferes("deals", [_c("Ann", match_by="name", match_value="Ann")])


def test_rewriting_a_dedup_key_interferes() -> None:
    rekey = _c("Bob", "new@x.io", match_by="name", match_value="Bob")
    assert rewrites_dedup_key("contacts", rekey)
    assert chunk_interferes("contacts", [_c("Ann", "a@x.io"), rekey])
    same = _c("Bob", "b@x.io", match_by="email", match_value="b@x.io")
    assert not rewrites_dedup_key("contacts", same)
    assert not rewrites_dedup_key("deals", rekey)
