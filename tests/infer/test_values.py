"""What a column's values look like (``recordsync.infer.values``)."""

from __future__ import annotations

from recordsync.infer.values import is_phone_column, sniff, split_char


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
