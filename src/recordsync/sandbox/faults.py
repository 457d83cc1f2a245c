"""Deterministic fault injection for the sandbox: an ASGI middleware, off unless asked for.

A fault is written as a short spec (``recordsync sandbox --fault SPEC``, repeatable, or
``create_app(..., faults=[...])``)::

    latency:50ms                       delay every request by 50 ms (also 0.2s, 200 = ms)
    status:503:every=5                 answer every 5th request with 503 and {error}
    429:every=7:retry_after=1          a bare status code works too; 429 carries Retry-After
    drop-after-apply:every=4           let the request apply, then drop the connection mid-body
    drop:every=3                       drop the connection before the request is applied
                                       (the client cannot tell the two drops apart)
    status-after-apply:502:every=4     let the request apply, then answer 502 with {error}
    html:502:every=3                   answer 502 with a proxy's HTML error page (not applied)
    html-after-apply:504:every=3       let the request apply, then answer 504 with that page
    timeout-after-apply:every=5        let the request apply, then never answer: the request
                                       hangs until the client gives up and closes it
    skew:date=+2s                      a test knob for clocks that disagree: every answer's
                                       ``Date`` header runs 2 s ahead of the sandbox's clock
    skew:stamps=-30s                   ``created_at`` / ``updated_at`` are stamped 30 s behind
                                       it (``date=`` and ``stamps=`` combine; a bare number is
                                       milliseconds, as for latency; no other option applies)
    ...:path=/batch                    only requests whose path contains "/batch" count
    ...:method=GET                     only requests of that method count
    ...:after=10                       let the first 10 matching requests through untouched

Every spec counts the requests it matches (its own counter, never random), so the Nth
request of a test run fails the same way each time. ``every`` defaults to 1 (every request).
A ``skew`` is no fault of some requests but of the sandbox's clocks: it counts nothing.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from recordsync.core.errors import ConfigError
from recordsync.sandbox.fault_replies import (
    apply,
    apply_then_drop,
    cut,
    dated,
    send_html,
    send_status,
    wait_for_disconnect,
)
from recordsync.sandbox.fault_spec import FaultSpec

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Any
Send = Any
ASGIApp = Any

VALID_FORMS = (
    "latency:<n>ms | latency:<n>s",
    "status:<code>[:every=N] | <code>[:every=N][:retry_after=S]",
    "drop-after-apply[:every=N]",
    "drop[:every=N]",
    "status-after-apply:<code> | html:<code> | html-after-apply:<code>",
    "timeout-after-apply[:every=N]",
    "skew:date=<+/-n>s[:stamps=<+/-n>s] (the Date header's and the timestamps' offsets)",
    "options on any form: every=N, after=N, path=<substring>, method=<GET|POST|...>,"
    " retry_after=<seconds>",
)

_KINDS = ("latency", "status", "drop-after-apply", "drop", "timeout-after-apply")
_AFTER_APPLY = ("status-after-apply", "html-after-apply", "timeout-after-apply")
_CODED = ("status-after-apply", "html", "html-after-apply")
"""Kinds that take a status code as their first argument."""


def _bad(text: str, why: str) -> ConfigError:
    return ConfigError(
        f"invalid fault spec {text!r}: {why}",
        key="fault",
        hint="valid forms: " + "; ".join(VALID_FORMS),
    )


def _parse_delay(text: str, value: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s)?", value.strip())
    if not m:
        raise _bad(text, f"latency {value!r} is not a duration like 50ms or 0.2s")
    number = float(m.group(1))
    return number if m.group(2) == "s" else number / 1000.0


def _parse_offset(text: str, key: str, value: str) -> float:
    m = re.fullmatch(r"([+-]?)(\d+(?:\.\d+)?)(ms|s)?", value.strip())
    if not m:
        raise _bad(text, f"{key}={value!r} is not an offset like +2s, -30s or 500ms")
    size = float(m.group(2)) if m.group(3) == "s" else float(m.group(2)) / 1000.0
    return -size if m.group(1) == "-" else size


def _parse_skew(text: str, options: dict[str, str]) -> FaultSpec:
    unknown = set(options) - {"date", "stamps"}
    if unknown:
        raise _bad(text, f"option(s) {', '.join(sorted(unknown))} do not apply to a skew")
    if not options:
        raise _bad(text, "skew needs date=<offset> and/or stamps=<offset>, e.g. skew:date=+2s")
    date = options.get("date")
    return FaultSpec(
        kind="skew",
        text=text.strip(),
        date_offset_s=_parse_offset(text, "date", date) if date is not None else None,
        stamp_offset_s=_parse_offset(text, "stamps", options.get("stamps", "0")),
    )


def _parse_status(text: str, value: str) -> int:
    if not value.isdigit() or not 100 <= int(value) <= 599:
        raise _bad(text, f"{value!r} is not an HTTP status code (100-599)")
    return int(value)


def _parse_count(text: str, key: str, value: str, minimum: int) -> int:
    if not value.isdigit() or int(value) < minimum:
        raise _bad(text, f"{key}={value!r} must be an integer >= {minimum}")
    return int(value)


def parse_fault_spec(text: str) -> FaultSpec:
    """Parse ``text`` (see the module docstring); a bad spec is a ConfigError naming it."""
    parts = [p.strip() for p in text.strip().split(":")]
    if not parts or not parts[0]:
        raise _bad(text, "empty spec")
    head, rest = parts[0].lower(), parts[1:]
    kind: str
    status: int | None = None
    delay = 0.0
    if head.isdigit():
        kind, status = "status", _parse_status(text, head)
    elif head == "status":
        if not rest or "=" in rest[0]:
            raise _bad(text, "status needs a code, e.g. status:503")
        kind, status, rest = "status", _parse_status(text, rest[0]), rest[1:]
    elif head in _CODED:
        if not rest or "=" in rest[0]:
            raise _bad(text, f"{head} needs a code, e.g. {head}:502")
        kind, status, rest = head, _parse_status(text, rest[0]), rest[1:]
    elif head == "latency":
        if not rest or "=" in rest[0]:
            raise _bad(text, "latency needs a duration, e.g. latency:50ms")
        kind, delay, rest = "latency", _parse_delay(text, rest[0]), rest[1:]
    elif head in _KINDS or head == "skew":
        kind = head
    else:
        raise _bad(text, f"unknown fault kind {parts[0]!r}")
    options: dict[str, str] = {}
    for opt in rest:
        key, sep, value = opt.partition("=")
        key = key.strip().lower().replace("-", "_")
        if not sep or not value:
            raise _bad(text, f"option {opt!r} is not key=value")
        if key in options:
            raise _bad(text, f"option {key!r} given twice")
        options[key] = value.strip()
    if kind == "skew":
        return _parse_skew(text, options)
    unknown = set(options) - {"every", "after", "path", "retry_after", "method"}
    if unknown:
        raise _bad(text, f"unknown option(s) {', '.join(sorted(unknown))}")
    retry_after = options.get("retry_after")
    if retry_after is not None and kind != "status":
        raise _bad(text, "retry_after only applies to a status fault")
    return FaultSpec(
        kind=kind,
        text=text.strip(),
        status=status,
        delay_s=delay,
        every=_parse_count(text, "every", options.get("every", "1"), 1),
        after=_parse_count(text, "after", options.get("after", "0"), 0),
        path=options.get("path"),
        retry_after=retry_after,
        method=options["method"].upper() if "method" in options else None,
    )


class _Counter:
    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = 0


class FaultMiddleware:
    """ASGI middleware applying ``specs`` in order; the first fault that fires decides."""

    def __init__(self, app: ASGIApp, specs: list[FaultSpec]) -> None:
        self.app = app
        self.date_offset_s = date_offset(specs)
        self.specs = specs = [s for s in specs if s.kind != "skew"]
        self._counters = [_Counter() for _ in specs]
        self._applying = asyncio.Lock()
        """Held while a request of an after-apply fault is applied: a request that arrives
        meanwhile (a client's read-back after a timeout) waits until the write is done."""
        self._gated = any(s.kind in _AFTER_APPLY for s in specs)

    def __getattr__(self, name: str) -> Any:  # expose the wrapped app's ``state`` etc.
        if name == "app":  # not set yet: never recurse
            raise AttributeError(name)
        return getattr(self.app, name)

    def _fires(self, index: int, spec: FaultSpec, path: str, method: str) -> bool:
        if spec.path is not None and spec.path not in path:
            return False
        if spec.method is not None and spec.method != method:
            return False
        counter = self._counters[index]
        counter.seen += 1
        n = counter.seen - spec.after
        return n > 0 and n % spec.every == 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        if self.date_offset_s is not None:
            send = dated(send, self.date_offset_s)
        path = str(scope.get("path", ""))
        # No await between counting and deciding: counters are exact on one event loop.
        method = str(scope.get("method", ""))
        fired = [s for i, s in enumerate(self.specs) if self._fires(i, s, path, method)]
        for spec in fired:
            if spec.kind == "latency":
                await asyncio.sleep(spec.delay_s)
            elif spec.kind == "status":
                await send_status(send, spec)
                return
            elif spec.kind == "drop":
                await cut(send, 200, b"")
                return
            elif spec.kind == "drop-after-apply":
                await apply_then_drop(self.app, scope, receive, send, spec)
                return
            elif spec.kind == "html":
                await send_html(send, spec)
                return
            elif spec.kind in ("status-after-apply", "html-after-apply"):
                async with self._applying:
                    await apply(self.app, scope, receive)
                await (send_status if spec.kind == "status-after-apply" else send_html)(
                    send, spec
                )
                return
            elif spec.kind == "timeout-after-apply":
                async with self._applying:
                    await apply(self.app, scope, receive)
                await wait_for_disconnect(receive)
                return
        if self._gated:
            async with self._applying:
                pass
        await self.app(scope, receive, send)


def date_offset(specs: Sequence[FaultSpec]) -> float | None:
    """The ``Date`` header's offset a ``skew`` asks for (None: the server's own header)."""
    offsets = [s.date_offset_s for s in specs if s.date_offset_s is not None]
    return sum(offsets) if offsets else None


def stamp_offset_ms(specs: Sequence[FaultSpec]) -> int:
    """The offset (ms) of the clock that stamps records, as the ``skew`` specs ask."""
    return round(sum(s.stamp_offset_s for s in specs) * 1000)


def wrap_with_faults(app: ASGIApp, specs: list[FaultSpec | str] | None) -> ASGIApp:
    """Wrap ``app`` with the given faults (specs or spec strings); no specs → ``app`` itself."""
    if not specs:
        return app
    parsed = [s if isinstance(s, FaultSpec) else parse_fault_spec(s) for s in specs]
    return FaultMiddleware(app, parsed)
