"""Value checks per field type (columnar), with the messages users see."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
from hypothesis import assume, given
from hypothesis import strategies as st

from recordsync.config import FieldSpec
from recordsync.validate import FieldDef, Schema, SelectOption, check_array
from recordsync.validate.distinct import repetitive
from recordsync.validate.values import _check_array

SPEC = FieldSpec(column="c")
EMAIL_REASON = "is not a valid email address (one @, a dot in the domain, no spaces)"


def check(
    values: list[str | None],
    ftype: str,
    fdef: FieldDef | None = None,
    spec: FieldSpec = SPEC,
    users: frozenset[str] | None = None,
) -> list[tuple[object, str | None]]:
    chk = check_array(pa.array(values, pa.string()), ftype, fdef, spec, users)
    reasons = chk.reasons or [None] * len(values)
    return list(zip(chk.values, reasons, strict=True))


def test_numbers_with_separators_ranges_and_decimal_places() -> None:
    score = FieldDef("lead_score", "number", number_min=0, number_max=100, decimal_places=0)
    spec = FieldSpec(column="c", decimal_separator=",", thousands_separator=".")
    out = check(["42", "1.000", "99,0", "150", "-1", "12,5", "abc", None], "number", score, spec)
    assert out[0] == (42, None)
    assert out[1] == (None, "must be <= 100")  # 1000
    assert out[2] == (99, None)
    assert out[3][1] == "must be <= 100"
    assert out[4][1] == "must be >= 0"
    assert out[5][1] == "must have at most 0 decimal places"
    assert out[6][1] is not None and out[6][1].startswith("is not a number")
    assert out[7] == (None, None)


def test_currency_symbols_and_percent_signs_are_accepted() -> None:
    amount = FieldDef("amount", "currency", number_min=0, decimal_places=2)
    assert check(["$1200.50", "€ 3", "1.234"], "currency", amount) == [
        (1200.5, None),
        (3.0, None),
        (None, "must have at most 2 decimal places"),
    ]
    prob = FieldDef("probability", "percentage", number_min=0, number_max=100, decimal_places=0)
    assert check(["45%", "100 %"], "percentage", prob)[0] == (45, None)


@given(
    st.decimals(
        min_value=Decimal("-1e9"),
        max_value=Decimal("1e9"),
        places=2,
        allow_nan=False,
        allow_infinity=False,
    ),
    st.sampled_from([(",", "."), (".", ","), (",", " "), (".", None), (",", None)]),
)
def test_number_round_trip_with_separators(value: Decimal, seps: tuple[str, str | None]) -> None:
    dec, thou = seps
    text = f"{value:,.2f}" if thou else f"{value:.2f}"
    text = text.replace(",", "\0").replace(".", dec).replace("\0", thou or "")
    spec = FieldSpec(column="c", decimal_separator=dec, thousands_separator=thou)
    fdef = FieldDef("n", "number", decimal_places=2)
    [(parsed, reason)] = check([text], "number", fdef, spec)
    assert reason is None, (text, reason)
    assert Decimal(str(parsed)) == value


def test_boolean_spellings() -> None:
    vals = ["yes", "No", "Y", "n", "1", "0", "TRUE", "false", "maybe"]
    out = check(vals, "boolean")
    assert [v for v, _ in out] == [True, False, True, False, True, False, True, False, None]
    assert out[-1][1] is not None and "not a boolean" in out[-1][1]


def test_dates_iso_declared_ambiguous_and_impossible() -> None:
    out = check(["2024-03-04", "03/04/2024", "13/04/2024", "2024-02-30", "soon"], "date")
    assert out[0] == ("2024-03-04", None)
    assert out[1][1] is not None and "ambiguous" in out[1][1] and "2024-04-03" in out[1][1]
    assert out[2][1] is not None and "date_format: '%d/%m/%Y'" in out[2][1]
    assert out[3][1] == "is no such date"
    assert out[4][1] is not None
    spec = FieldSpec(column="c", date_format="%d/%m/%Y")
    assert check(["03/04/2024", "31/02/2025"], "date", spec=spec) == [
        ("2024-04-03", None),
        (None, "does not match date_format '%d/%m/%Y' (or is no such date)"),
    ]


def test_datetimes_to_utc_with_declared_format_and_timezone() -> None:
    spec = FieldSpec(column="c", datetime_format="%d.%m.%Y %H:%M", timezone="Europe/Berlin")
    out = check(
        ["01.07.2024 12:00", "01.01.2024 00:30", "31.04.2024 10:00", "x"], "datetime", spec=spec
    )
    assert out[0] == ("2024-07-01T10:00:00Z", None)
    assert out[1] == ("2023-12-31T23:30:00Z", None)
    assert out[2][0] is None and out[2][1] is not None
    assert out[3][1] is not None
    iso = check(["2024-07-01T12:00:00+02:00", "2024-07-01 12:00", "nope"], "datetime")
    assert iso[0] == ("2024-07-01T10:00:00Z", None)
    assert iso[1] == ("2024-07-01T12:00:00Z", None)
    assert iso[2][1] is not None and "ISO 8601" in iso[2][1]


def test_select_value_or_label_and_suggestion(schema: Schema) -> None:
    stage = schema.types["deals"].fields["stage"]
    chk = check_array(
        pa.array(["won", "Won", " LOST ", "Won!", "Wonn"]), "select", stage, SPEC, None
    )
    assert chk.values[:3] == ["won", "won", "lost"]
    assert chk.reasons is not None
    assert chk.reasons[3] == "is not an option (prospecting, proposal, negotiation, won, lost)"
    assert chk.hints is not None and chk.hints[3] == {"value_map": {"Won!": "won"}}
    assert chk.hints[4] == {"value_map": {"Wonn": "won"}}


def test_email_url_relationship_user() -> None:
    assert check(["A@B.example", "a@", "a b@c.d"], "email") == [
        ("a@b.example", None),
        (None, EMAIL_REASON),
        (None, EMAIL_REASON),
    ]
    url = check(["https://x.example/a?b", "www.x.example", "ftp://x.example"], "url")
    assert url[0] == ("https://x.example/a?b", None)
    assert url[1][1] is not None and url[2][1] is not None
    assert check(["42", "4.2", "x"], "relationship") == [
        (42, None),
        (None, "is not a record id (an integer)"),
        (None, "is not a record id (an integer)"),
    ]
    users = frozenset({"u1"})
    assert check(["u1", "u2"], "user", users=users)[1][1] == (
        "is not a user id of this organization"
    )


def test_select_without_schema_options_is_text() -> None:
    fdef = FieldDef("x", "select", options=(SelectOption("a", "A"),))
    assert check(["A"], "select", fdef) == [("a", None)]


def test_decimal_places_are_counted_on_the_number_sent() -> None:
    amount = FieldDef("amount", "currency", decimal_places=2)
    cells = ["12345678.01", "123456789.001", "1e-7", "0.1", "99.9999999999", "1e20"]
    out = check(cells, "currency", amount)
    assert out[0] == (12345678.01, None)
    assert out[1] == (None, "must have at most 2 decimal places")  # a tolerance let it through
    assert out[2] == (None, "must have at most 2 decimal places")
    assert out[3] == (0.1, None)
    assert out[4] == (None, "must have at most 2 decimal places")
    assert out[5] == (1e20, None)


def test_whole_numbers_keep_their_digits_and_huge_ones_stay_numbers() -> None:
    count = FieldDef("count", "number", decimal_places=0)
    out = check(["12345678.01", "7.0", "-0", "1e20", "12345678901234567890"], "number", count)
    assert out[0] == (None, "must have at most 0 decimal places")  # not cut to 12345678
    assert out[1] == (7, None) and type(out[1][0]) is int
    assert out[2] == (0, None)
    assert out[3] == (1e20, None) and type(out[3][0]) is float  # no int64 overflow
    assert out[4] == (12345678901234567890.0, None)


def test_a_number_too_large_for_json_is_rejected() -> None:
    reason = "is out of range (too large to be a number the service takes)"
    assert check(["1e999", "-1e400"], "number") == [(None, reason), (None, reason)]


def test_record_ids_too_long_for_an_id_are_rejected_not_a_crash() -> None:
    big = ["99999999999999999999", "9223372036854775808", "9223372036854775807", "00042"]
    out = check(big, "relationship")
    assert out[0] == out[1] == (None, "is not a record id (an integer)")  # beyond 64 bits
    assert out[2] == (2**63 - 1, None)
    assert out[3] == (42, None)


def test_phone_is_checked_by_check_array() -> None:
    assert check(["+1 555 0100", "12"], "phone")[0] == ("+1 555 0100", None)
    assert check(["12"], "phone")[0][1] is not None


_CASES = {  # a field type, its definition and spec, and cells it may meet (valid or not)
    "number": (
        FieldDef("n", "number", number_min=0, number_max=100, decimal_places=0),
        FieldSpec(column="c", thousands_separator=","),
        ["42", "1,000", "-1", "12.5", "abc", "1e400", " 7 ", "$5", "0.0"],
    ),
    "currency": (FieldDef("c", "currency", decimal_places=2), SPEC, ["1.005", "3", "x", "1e-7"]),
    "email": (None, SPEC, ["a@x.io", " B@X.IO ", "a@b", "x" * 250 + "@x.io", "a b@x.io"]),
    "phone": (None, SPEC, ["+44 20 1234 5678", "12", "call me", "555-1234 ext 9"]),
    "datetime": (
        None,
        FieldSpec(column="c", datetime_format="%Y-%m-%d %H:%M", timezone="Europe/Berlin"),
        ["2025-03-30 02:30", "2025-02-29 10:00", "2025-06-01 10:00", "x", "2025-01-31 23:59"],
    ),
    "relationship": (None, SPEC, ["12", "007", "99999999999999999999", "-3", "a"]),
    "user": (None, SPEC, ["u1", "u2", "nobody"]),
}


@given(st.sampled_from(sorted(_CASES)), st.data())
def test_a_column_repeating_its_values_is_checked_as_cell_by_cell(
    ftype: str, data: st.DataObject
) -> None:
    """Checked once per distinct value (the column repeats its values) or cell by cell, every
    row gets the same value, reason and hint."""
    fdef, spec, cells = _CASES[ftype]
    pool = st.one_of(st.none(), st.sampled_from(cells))
    column = data.draw(st.lists(pool, min_size=256, max_size=600))
    arr = pa.array(column, pa.string())
    users = frozenset({"u1", "u2"})
    assert repetitive(arr)
    got = check_array(arr, ftype, fdef, spec, users)
    want = _check_array(arr, ftype, fdef, spec, users, None)
    assert (got.values, got.reasons, got.hints) == (want.values, want.reasons, want.hints)


GROUPING = "only between groups of three digits"


def test_thousands_separators_only_in_grouping_positions() -> None:
    spec = FieldSpec(column="c", thousands_separator=",")
    good: list[str | None] = [
        "1,234,567.89",
        "1234567.89",
        "999",
        "-1,000",
        "$1,000.50",
        "12,345e2",
        "0.5",
    ]
    assert [v for v, _ in check(good, "number", spec=spec)] == [
        1234567.89,
        1234567.89,
        999.0,
        -1000.0,
        1000.5,
        1234500.0,
        0.5,
    ]
    bad: list[str | None] = [
        "12,34",
        "1.234,56",
        "1,2345",
        "1234,567",
        ",123",
        "1,234,",
        "1,234.5,6",
        "1,,234",
    ]
    for cell, (value, reason) in zip(bad, check(bad, "number", spec=spec), strict=True):
        assert value is None, cell
        assert reason == (
            "is not a number (decimal separator '.', thousands separator ',' "
            f"{GROUPING}: 1,234,567.89)"
        ), cell


def test_european_separators_refuse_the_other_spelling() -> None:
    spec = FieldSpec(column="c", decimal_separator=",", thousands_separator=".")
    out = check(["1.234,56", "1,234.56", "1.5", "1234,5"], "number", spec=spec)
    assert out[0] == (1234.56, None)
    assert out[1][0] is None and out[2][0] is None  # never 1.23456 nor 1.5
    assert out[3] == (1234.5, None)
    only_comma = FieldSpec(column="c", decimal_separator=",")
    assert check(["1.5"], "number", spec=only_comma)[0] == (
        None,
        "is not a number (decimal separator ',')",
    )


def test_a_space_separator_also_matches_no_break_spaces() -> None:
    spec = FieldSpec(column="c", decimal_separator=",", thousands_separator=" ")
    cells: list[str | None] = ["1\u00a0234,5 €", "1\u202f234", "1 234 567", "12 34"]
    assert [v for v, _ in check(cells, "number", spec=spec)] == [1234.5, 1234.0, 1234567.0, None]


SEPARATORS = [(".", ","), (",", "."), (".", "'"), (",", " "), (".", " "), (",", "'")]


def _spelled(text: str, dec: str, thou: str) -> str:
    """Python's ``format(n, ',')`` text with the given separators."""
    return text.replace(",", "\0").replace(".", dec).replace("\0", thou)


NUMBERS = st.one_of(
    st.integers(min_value=-(10**18), max_value=10**18),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e20, max_value=1e20),
)


@given(NUMBERS, st.sampled_from(SEPARATORS))
def test_grouped_numbers_parse_back(n: int | float, seps: tuple[str, str]) -> None:
    dec, thou = seps
    text = _spelled(format(n, ","), dec, thou)
    spec = FieldSpec(column="c", decimal_separator=dec, thousands_separator=thou)
    [(parsed, reason)] = check([text], "number", spec=spec)
    assert reason is None, text
    assert parsed == float(n), text


@given(NUMBERS, st.sampled_from(SEPARATORS), st.data())
def test_a_separator_out_of_place_is_invalid(
    n: int | float, seps: tuple[str, str], data: st.DataObject
) -> None:
    dec, thou = seps
    text = _spelled(format(n, ","), dec, thou)
    at = data.draw(st.integers(min_value=0, max_value=len(text)), label="at")
    assume(thou != " " or 0 < at < len(text))  # a space at either end is trimmed, as blanks are
    moved = text[:at] + thou + text[at:]
    spec = FieldSpec(column="c", decimal_separator=dec, thousands_separator=thou)
    [(parsed, reason)] = check([moved], "number", spec=spec)
    assert parsed is None, moved
    assert reason is not None and GROUPING in reason
