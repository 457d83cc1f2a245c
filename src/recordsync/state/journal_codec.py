"""How the journal keeps a chunk's rows and outcomes in ``chunk_log``: JSON text, and an
acknowledged chunk's outcomes compressed.

A chunk's outcomes (source row, key, input hash, status, record id, error per row) stay in
the journal until the run is finished (a resumed run reports and folds from them): about
93 bytes a row as JSON, 40 compressed (zlib, then base64: still text, in an SQLite and a
PostgreSQL column alike). A compressed text starts with :data:`PACKED` (JSON never does);
:func:`decode` reads both, so journals written before are read as they are. SQLite's JSON
functions read only the plain form: the journal folds a compressed chunk in Python
(``chunk_log.plain`` is 0 for it).
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

import orjson

PACKED = "~"
"""The first character of a compressed text."""
PACK_FROM = 512
"""Characters of JSON from which a chunk's outcomes are compressed."""
_LEVEL = 1  # zlib's fastest: most of the gain (a 100-row chunk: 9.3 kB → 3.2 kB)


def json_text(rows: list[tuple[object, ...]]) -> str:
    """A chunk's rows or outcomes as compact JSON text (never bytes: SQLite would store a
    BLOB): orjson, or ``json.dumps`` for what orjson refuses (a lone surrogate, an integer
    beyond 64 bits). Both read back alike, with ``json.loads`` and SQLite's JSON functions."""
    try:
        return orjson.dumps(rows).decode()
    except orjson.JSONEncodeError:
        return json.dumps(rows, separators=(",", ":"))


def pack(rows: list[tuple[object, ...]]) -> str:
    """``rows`` as :func:`json_text`, compressed when it is :data:`PACK_FROM` characters or
    more."""
    text = json_text(rows)
    if len(text) < PACK_FROM:
        return text
    packed = zlib.compress(text.encode("utf-8", "surrogatepass"), _LEVEL)
    return PACKED + base64.b64encode(packed).decode("ascii")


def decode(text: str) -> list[Any]:
    """The rows of a :func:`pack` or :func:`json_text` text."""
    if text.startswith(PACKED):
        raw = zlib.decompress(base64.b64decode(text[len(PACKED) :]))
        text = raw.decode("utf-8", "surrogatepass")
    rows: list[Any] = json.loads(text)
    return rows


def is_plain(text: str) -> bool:
    """Whether SQLite's JSON functions can read ``text`` (not compressed, no NUL escape)."""
    return not text.startswith(PACKED) and "\\u0000" not in text
