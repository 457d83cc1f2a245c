"""Dedup keys: the variants the contract names map to the same key (hypothesis)."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from recordsync.sandbox.normalize import (
    LEGAL_SUFFIXES,
    domain_key,
    email_key,
    linkedin_key,
    name_key,
)

label = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
host = st.lists(label, min_size=1, max_size=3).map(lambda xs: ".".join([*xs, "com"]))
path = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789/-_", max_size=15)
case = st.sampled_from([str.lower, str.upper, str.title])
words = st.lists(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8),
    min_size=1,
    max_size=4,
)


@given(local=label, domain=host, flip=case, pad=st.sampled_from(["", " ", "\t", "  "]))
def test_email_key_ignores_case_and_surrounding_space(
    local: str, domain: str, flip: object, pad: str
) -> None:
    email = f"{local}@{domain}"
    variant = pad + flip(email) + pad  # type: ignore[operator]
    assert email_key(variant) == email_key(email) == email.lower()


@given(
    domain=host,
    scheme=st.sampled_from(["", "http://", "https://", "HTTPS://"]),
    www=st.booleans(),
    tail=path,
    flip=case,
)
def test_domain_key_ignores_scheme_www_path_and_case(
    domain: str, scheme: str, www: bool, tail: str, flip: object
) -> None:
    variant = flip(scheme + ("www." if www else "") + domain + ("/" + tail if tail else ""))  # type: ignore[operator]
    assert domain_key(variant) == domain.lower().removeprefix("www.")


@given(
    slug=label,
    scheme=st.sampled_from(["", "http://", "https://"]),
    www=st.booleans(),
    query=st.sampled_from(["", "?trk=abc", "?a=1&b=2", "#top"]),
    slashes=st.sampled_from(["", "/", "//"]),
    flip=case,
)
def test_linkedin_key_ignores_scheme_www_query_trailing_slash_and_case(
    slug: str, scheme: str, www: bool, query: str, slashes: str, flip: object
) -> None:
    url = f"linkedin.com/company/{slug}"
    variant = flip(scheme + ("www." if www else "") + url + slashes + query)  # type: ignore[operator]
    assert linkedin_key(variant) == url.lower()


@given(
    parts=words,
    suffix=st.sampled_from(sorted(LEGAL_SUFFIXES)),
    flip=case,
    punct=st.sampled_from(["", ".", ","]),
    gap=st.sampled_from([" ", "  ", "\t"]),
)
def test_name_key_drops_case_punctuation_spaces_and_one_legal_suffix(
    parts: list[str], suffix: str, flip: object, punct: str, gap: str
) -> None:
    assume(parts[-1] not in LEGAL_SUFFIXES)
    base = " ".join(parts)
    decorated = flip(gap.join(parts) + punct + " " + suffix + punct)  # type: ignore[operator]
    assert name_key(decorated) == name_key(base) == base


def test_name_key_examples() -> None:
    assert name_key("Acme, Inc.") == name_key("ACME") == "acme"
    assert name_key("S.A.") == "sa"  # only a suffix: compared as is
    assert name_key("Acme Inc Inc") == "acme inc"  # one suffix only
    assert name_key("Acme Industries") == "acme industries"
    assert name_key("!!!") is None and name_key(5) is None


def test_key_functions_reject_non_strings_and_blanks() -> None:
    for f in (email_key, domain_key, linkedin_key, name_key):
        assert f(None) is None and f("   ") is None and f(12) is None
