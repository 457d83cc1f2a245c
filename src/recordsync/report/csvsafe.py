"""Cells a spreadsheet would run as a formula are neutralised in ``failures.csv``.

A cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading
``'``. To keep this reversible, a cell that already starts with one or more ``'`` followed by
such a character gets one more ``'``. :func:`unneutralise` (used by ``recordsync retry`` when it
reads ``failures.csv`` back) removes exactly one, so ``unneutralise(neutralise(v)) == v``.
"""

from __future__ import annotations

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def _needs_quote(text: str) -> bool:
    return text.lstrip("'").startswith(TRIGGERS)


def needs_neutralising(text: str) -> bool:
    """True when :func:`neutralise` changes ``text``."""
    return _needs_quote(text)


def neutralise(text: str) -> str:
    return "'" + text if _needs_quote(text) else text


def unneutralise(text: str) -> str:
    return text[1:] if text.startswith("'") and _needs_quote(text) else text
