"""Formula-like cells are neutralised in failures.csv, and retry gets them back exactly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.report.csvsafe import neutralise, unneutralise


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ("=SUM(A1:A2)", "'=SUM(A1:A2)"),
        ("+1 555 0100", "'+1 555 0100"),
        ("-5", "'-5"),
        ("@cmd", "'@cmd"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("'=already", "''=already"),
        ("plain", "plain"),
        ("it's", "it's"),
        ("'quoted'", "'quoted'"),
        ("", ""),
    ],
)
def test_neutralise(raw: str, safe: str) -> None:
    assert neutralise(raw) == safe
    assert unneutralise(safe) == raw


@given(st.text())
def test_round_trip(text: str) -> None:
    assert unneutralise(neutralise(text)) == text


@given(st.text())
def test_neutralised_cells_never_start_a_formula(text: str) -> None:
    assert not neutralise(text).startswith(("=", "+", "-", "@", "\t", "\r"))
