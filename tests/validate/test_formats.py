"""Edges of the email, phone and URL rules (docs/sandbox.md: Validation)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.validate.checked import bad_mask, reasons_at
from recordsync.validate.formats import (
    EMAIL_MAX,
    EMAIL_RE,
    EMAIL_REASON,
    check_email,
    check_phone,
    check_url,
    digit_counts,
)


def verdicts(check: object, values: list[str]) -> list[object]:
    """The value sent per cell, or None when it is rejected."""
    chk = check(pa.array(values, pa.string()))  # type: ignore[operator]
    reasons = chk.reasons or [None] * len(values)
    return [v if r is None else None for v, r in zip(chk.values, reasons, strict=True)]


@pytest.mark.parametrize(
    ("cell", "sent"),
    [
        ("1234", None),  # 4 digits
        ("12345", "12345"),  # 5 digits
        ("+1 (555) 010-0199", "+1 (555) 010-0199"),
        ("555.010.0199 / 7", "555.010.0199 / 7"),
        ("1" * 20, "1" * 20),  # 20 digits
        ("1" * 21, None),  # 21 digits
        ("12345678901234567 x123", "12345678901234567 x123"),  # 20 with the extension
        ("123456789012345678 x123", None),  # 21 with the extension
        ("555 0100 ext 12", "555 0100 ext 12"),
        ("555 0100 ext. 12", "555 0100 ext. 12"),
        ("555 0100x1234567", None),  # an extension has at most 6 digits
        ("555 0100 X12", None),
        ("555 0100 #12", None),
        ("  555 0100  ", "555 0100"),  # trimmed, also of Unicode spaces
        ("\u3000555 0100", "555 0100"),
        ("555\u00a00100", None),
        ("++555 0100", None),
        ("555+0100", None),
        ("١٢٣٤٥٦", None),  # digits of another script
        ("n/a", None),
        ("12", None),
    ],
)
def test_phone_numbers(cell: str, sent: str | None) -> None:
    assert verdicts(check_phone, [cell]) == [sent]


@pytest.mark.parametrize(
    ("cell", "sent"),
    [
        ("Ann@X.io", "ann@x.io"),
        (" ann@x.io\u2003", "ann@x.io"),
        ("ann@x", None),  # no dot in the domain
        ("ann@x.", None),
        ("ann@@x.io", None),
        ("ann@b@x.io", None),
        ("an n@x.io", None),
        ("ann@x\u00a0y.io", None),
        ('"ann"@x.io', None),
        ("ann(x)@x.io", None),
        ("ann,bo@x.io", None),
        ("ann;bo@x.io", None),
        ("<ann@x.io>", None),
        ("ann@[1.2.3.4]", None),
        ("ann+tag@mail.x.io", "ann+tag@mail.x.io"),
        ("jöns@exämple.se", "jöns@exämple.se"),
        ("a" * 249 + "@x.io", "a" * 249 + "@x.io"),  # 254 characters
        ("a" * 250 + "@x.io", None),  # 255
    ],
)
def test_email_addresses(cell: str, sent: str | None) -> None:
    assert verdicts(check_email, [cell]) == [sent]


def test_an_email_too_long_says_so() -> None:
    chk = check_email(pa.array(["a" * 250 + "@x.io"], pa.string()))
    assert chk.reasons == ["is not a valid email address (longer than 254 characters)"]


@pytest.mark.parametrize(
    ("cell", "sent"),
    [
        ("https://x.example/a?b#c", "https://x.example/a?b#c"),
        ("HTTP://X.example", "HTTP://X.example"),
        ("http://localhost:8080/", "http://localhost:8080/"),  # no dot needed
        ("http://[::1]/x", "http://[::1]/x"),
        ("http://user:pw@h.io", "http://user:pw@h.io"),
        ("https://exämple.de/ä", "https://exämple.de/ä"),
        (" https://x.example ", "https://x.example"),
        ("www.x.example", None),
        ("ftp://x.example", None),
        ("mailto:a@x.io", None),
        ("http://", None),
        ("https:///path", None),
        ("http://[::1/x", None),
        ("http://x.example/a b", None),
        ("http://x.example/a\u2003b", None),
        ("http:x.example", None),
    ],
)
def test_urls(cell: str, sent: str | None) -> None:
    assert verdicts(check_url, [cell]) == [sent]


def test_urls_mixed_with_blanks_keep_their_rows() -> None:
    chk = check_url(pa.array(["https://a.io", None, "www.b.io", "http://[::1]"], pa.string()))
    assert chk.values == ["https://a.io", None, None, "http://[::1]"]
    assert chk.reasons is not None and [r is not None for r in chk.reasons] == [
        False,
        False,
        True,
        False,
    ]


def test_digit_counts_agree_with_counting_in_python() -> None:
    cells = ["+1 (555) 0100", None, "", "١٢3", "x", "0" * 30, "é9"]
    arr = pa.array(cells, pa.string())
    expected = [sum(c in "0123456789" for c in v) if v is not None else 0 for v in cells]
    assert digit_counts(arr).tolist() == expected
    assert digit_counts(arr.slice(2, 4)).tolist() == expected[2:6]  # an array with an offset
    assert digit_counts(pa.array([None, ""], pa.string())).tolist() == [0, 0]


def test_whitespace_is_every_code_point_python_calls_space() -> None:
    """The spelled-out constant (computed at import it cost 40 ms of every start-up)."""
    from recordsync.validate.formats import WHITESPACE

    assert "".join(chr(c) for c in range(0x110000) if chr(c).isspace()) == WHITESPACE


def _email_as_before(arr: pa.Array) -> tuple[list[str | None], list[str | None] | None]:
    """check_email before its every-value-fine shortcut (values via if_else, always)."""
    low = pc.utf8_lower(pc.utf8_trim_whitespace(arr))
    short = pc.less_equal(pc.utf8_length(low), EMAIL_MAX)
    ok = pc.and_(pc.match_substring_regex(low, EMAIL_RE), short)
    reasons = reasons_at(bad_mask(arr, ok), EMAIL_REASON)
    if reasons is not None:
        for i in bad_mask(arr, short).nonzero()[0].tolist():
            reasons[i] = f"is not a valid email address (longer than {EMAIL_MAX} characters)"
    return pc.if_else(ok, low, None).to_pylist(), reasons


_email_cells = st.one_of(
    st.none(),
    st.from_regex(r"\A ?[a-zA-Z.+]{1,8}@[a-z]{1,6}\.[a-z]{2,3} ?\Z"),
    st.text(alphabet="aB@. ;é", max_size=12),
    st.just("a" * 250 + "@x.io"),
)


@given(st.lists(_email_cells, max_size=12))
def test_email_check_is_the_same_with_and_without_invalid_values(
    cells: list[str | None],
) -> None:
    arr = pa.array(cells, pa.string())
    chk = check_email(arr)
    assert (chk.values, chk.reasons) == _email_as_before(arr)
