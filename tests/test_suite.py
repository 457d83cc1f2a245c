"""Settings of the test suite itself: nothing in it may depend on the machine's speed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st


def test_hypothesis_examples_have_no_deadline() -> None:
    assert settings.default.deadline is None


@given(st.integers())
def test_a_given_test_without_settings_inherits_no_deadline(n: int) -> None:
    assert settings().deadline is None
