"""HTTP plumbing shared by the routes: JSON bodies in, JSON answers out, error mapping.

The contract's error shape is ``{"error": message}`` with ``Content-Type:
application/json`` on every response; handlers raise and :func:`endpoint` answers.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from recordsync.sandbox.service import NotFound
from recordsync.sandbox.validation import Invalid

MAX_BODY = 5 * 1024 * 1024
Handler = Callable[[Request], Awaitable[Response]]


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def json_response(
    payload: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(body, status_code=status, headers=headers, media_type="application/json")


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return json_response({"error": message}, status, headers)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"not JSON: {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number out of range: {text[:20]}")
    return value


def _check_strings(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise ValueError("NUL in a string")
            item.encode("utf-8")  # lone surrogates cannot be encoded
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def parse_json_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object; anything else (including strings holding NUL or lone
    surrogates, NaN/Infinity, or nesting too deep to parse) is ``Invalid JSON body``."""
    try:
        text = body.decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        if "\\u" in text:  # only escapes can smuggle NUL or lone surrogates in
            _check_strings(value)
    except (ValueError, RecursionError, UnicodeError) as exc:
        raise HttpError(400, "Invalid JSON body") from exc
    if not isinstance(value, dict):
        raise HttpError(400, "Invalid JSON body")
    return value


async def json_body(request: Request) -> dict[str, Any]:
    return parse_json_object(await request.body())


def endpoint(handler: Handler) -> Handler:
    """Turn the request errors a handler raises into their JSON answers."""

    @functools.wraps(handler)
    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except HttpError as exc:
            return error_response(exc.status, exc.message)
        except Invalid as exc:
            return error_response(400, str(exc))
        except NotFound as exc:
            return error_response(404, exc.message)

    return run
