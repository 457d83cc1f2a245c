"""A string that never shows itself: API keys travel as :class:`Secret`."""

from __future__ import annotations

import hmac
from typing import Any


class Secret:
    """Holds a secret value; ``str()``, ``repr()`` and f-strings print stars.

    Use :meth:`reveal` only at the point where the value goes on the wire.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"

    def __format__(self, spec: str) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Secret):
            return hmac.compare_digest(self._value.encode(), other._value.encode())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self) -> str | tuple[Any, ...]:
        raise TypeError("Secret values are not picklable")


def redact(text: str, *secrets: Secret | str | None) -> str:
    """Replace every occurrence of the given secrets in ``text`` with stars."""
    for s in secrets:
        if s is None:
            continue
        raw = s.reveal() if isinstance(s, Secret) else s
        if raw:
            text = text.replace(raw, "**********")
    return text
