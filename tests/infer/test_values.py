"""What a column's values look like (``recordsync.infer.values``)."""

from __future__ import annotations

from recordsync.infer.values import (
    is_phone_column,
    null_tokens,
    sniff,
    split_char,
    without_nulls,
)


def test_dates_get_their_format_and_day_month_ambiguity_is_said() -> None:
    clear = sniff(["31/01/2024", "15/02/2024", "01/03/2024"])
    assert (clear.kind, clear.date_format, clear.ambiguous_with) == ("date", "%d/%m/%Y", None)
    us = sniff(["01/31/2024", "02/15/2024"])
    assert (us.date_format, us.ambiguous_with) == ("%m/%d/%Y", None)
    both = sniff(["03/04/2024", "05/06/2024", "11/12/2024"])
    assert both.kind == "date" and both.ambiguous_with == "%m/%d/%Y"
    assert sniff(["2024-05-01", "2023-12-31"]).date_format == "%Y-%m-%d"
    assert sniff(["24.12.2024", "01.02.2023"]).date_format == "%d.%m.%Y"


def test_date_times_numbers_booleans_and_contacts() -> None:
    assert sniff(["2024-05-01 10:00:00"]).kind == "datetime"
    assert sniff(["05/01/2024 10:15 AM"]).date_format == "%m/%d/%Y %I:%M %p"
    us = sniff(["1,250", "$3,000.50", "12"])
    assert (us.kind, us.decimal_separator, us.thousands_separator) == ("number", ".", ",")
    eu = sniff(["1.250,75", "3,5"])
    assert (eu.decimal_separator, eu.thousands_separator) == (",", ".")
    assert sniff(["Yes", "no", "Y"]).kind == "boolean"
    assert sniff(["0", "1", "1"]).kind == "integer"  # may be a count: only a boolean by name
    assert sniff(["a@x.example", "B@y.example"]).kind == "email"
    assert sniff(["https://x.example/", "http://y.example"]).kind == "url"
    assert sniff(["www.x.example", "y.example"]).kind == "domain"
    assert sniff(["Acme", "Globex"]).kind == "text"
    assert sniff(["", "  "]).kind == "empty"


def test_phones_and_lists() -> None:
    assert is_phone_column(["+1 555 123 4567", "(555) 123-4567 x12"])
    assert not is_phone_column(["12", "34"])  # fewer than 5 digits
    assert split_char(["VIP;Partner", "VIP"]) == ";"
    assert split_char(["VIP"]) is None


def test_fractional_and_midnight_date_times() -> None:
    sql = sniff(["1996-07-04 00:00:00.000", "1996-08-01 00:00:00.000"])
    assert (sql.kind, sql.date_format, sql.midnight) == ("datetime", "%Y-%m-%d %H:%M:%S.%f", True)
    timed = sniff(["2006-02-14 22:04:36.00000", "2005-05-25 11:30:37.5"])
    assert timed.kind == "datetime" and not timed.midnight
    assert sniff(["2024-01-01T10:00:00.123Z"]).date_format == "%Y-%m-%dT%H:%M:%S.%fZ"


def test_null_like_cells_are_found_per_source_and_read_as_blank() -> None:
    cols = {"Region": ["NULL", "WA", "NULL"], "Fax": [" N/A ", "030-123"], "Qty": ["-", "3"]}
    assert null_tokens(cols) == ["NULL", "-", "N/A"]  # most frequent first, as spelled
    assert null_tokens({"Name": ["Nullarbor", "Ann", "n/a x"]}) == []  # whole cells only
    assert without_nulls(["NULL", "WA", " N/A "], ["NULL", "N/A"]) == ["", "WA", ""]
