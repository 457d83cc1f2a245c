"""A stable hash of what a batch input asks the service to store.

The hash covers ``name``, ``fields`` and ``profile_image_url`` only: the data written to
the record. It leaves out ``match_by`` and ``match_value`` on purpose: they say *which*
record to write, not *what* to write, so switching a mapping to match by the ledger's record
id (or from email to name) does not make every row look changed.

Canonical form: ``json.dumps`` with sorted keys at every depth, compact separators,
``ensure_ascii=False``, prefixed with a format tag; digest: the first 64 bits of BLAKE2b-128, as
16 hex characters (:data:`HASH_HEX`). A hash is only ever compared with the last one of the
same key (the ledger's, or the journal's on resume), so a change is missed only when the
new input's 64 bits equal the old one's: a chance of 2^-64 per changed row. Consequences:

- key order never matters (``{"a": 1, "b": 2}`` and ``{"b": 2, "a": 1}`` hash the same);
- every value change does, including type changes a JSON reader can see (``1`` vs ``"1"``
  vs ``1.0`` vs ``true``), and an absent key differs from an explicit ``null``;
- values that are not JSON (dates, decimals) are hashed by ``str()``, the way the mapping
  stage would have serialised them;
- the format tag is part of the hashed bytes: if the canonical form ever changes, the tag
  changes and every row is sent once more, never silently skipped.

:func:`encode_input` makes the same hash and, from the same encoding of the fields, the
batch input's JSON for the request body: with orjson, for values it writes byte for byte
as ``json.dumps`` does (strings, booleans, null, 64-bit integers, lists and objects of
them); any other value (a float, a date, a lone surrogate) takes the ``json.dumps`` path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from hashlib import blake2b
from itertools import chain, repeat
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from operator import itemgetter
from typing import Any

import orjson

HASHED_KEYS = ("name", "fields", "profile_image_url")
"""The batch-input keys that make up the hash (never ``match_by`` / ``match_value``)."""

FORMAT_TAG = b"recordsync-input-v1\n"
HASH_HEX = 16
"""Hex characters of a hash: 64 bits (state schema version 7; up to 6, the 32 of BLAKE2b-128,
of which these are the first: the upgrade cuts the stored hashes, nothing is sent again)."""

_encoder = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
_encode: Callable[[Any], str] = _encoder.encode
if c_make_encoder is not None:  # the C encoder without the per-call Python wrapper: ~2x faster
    _c_iterencode = c_make_encoder(None, str, encode_basestring, None, ":", ",", True, False, True)

    def _fast_encode(obj: Any) -> str:
        return "".join(_c_iterencode(obj, 0))

    _probe = {"b": [1, 2.5, None, True, "é\n"], "a": {"z": 1, "y": "x"}}
    if _fast_encode(_probe) == _encode(_probe):  # same bytes as json.dumps, or not used
        _encode = _fast_encode


def canonical_input(payload: Mapping[str, Any]) -> bytes:
    """The exact bytes that :func:`input_hash` digests."""
    subset = {k: payload[k] for k in HASHED_KEYS if k in payload}
    return FORMAT_TAG + _encode(subset).encode("utf-8", "surrogatepass")


def input_hash(payload: Mapping[str, Any]) -> str:
    """16 hex characters (64 bits) identifying the content of a batch input."""
    return blake2b(canonical_input(payload), digest_size=16).hexdigest()[:HASH_HEX]


_KNOWN = frozenset({*HASHED_KEYS, "match_by", "match_value"})
"""The batch-input keys :func:`encode_input` writes itself (any other: the json.dumps path)."""
_OPTIONS = (  # what orjson would write in its own way (dates, subclasses) makes it raise
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
_SCALARS = frozenset({str, int, bool, type(None)})
_NESTED = frozenset({list, dict})
_SCALARS_OR_CONTAINER = _SCALARS | _NESTED
_SCALARS_OR_LIST = _SCALARS | {list}
_MATCH_KEYS = ("match_by", "match_value")
_ABSENT = object()
_dumps = orjson.dumps


def _plain(payloads: Sequence[Mapping[str, Any]]) -> bool:
    """True if every payload is a dict of known keys whose values orjson writes exactly as the
    canonical ``json.dumps`` does: strings, booleans, null, integers, and lists and objects of
    those (one level deep: the fields' values); never floats, whose exponents the two write
    differently. orjson raises for what it cannot write the same way (integers beyond 64 bits,
    a lone surrogate, a key that is not a string). Checked for all of them at once, in a few
    passes over their values."""
    if set(map(type, payloads)) - {dict} or not set(chain.from_iterable(payloads)) <= _KNOWN:
        return False
    values: list[Any] = list(chain.from_iterable(map(dict.values, payloads)))  # type: ignore[arg-type]
    for depth in (1, 2, 3):  # payload values; the fields' values; their lists' items
        types = set(map(type, values))
        if types <= _SCALARS:
            return True
        if depth == 3 or not types <= _SCALARS_OR_CONTAINER:
            return False
        nested = [v for v in values if type(v) in _NESTED]
        if depth == 2 and dict in types:  # an object inside the fields
            return False
        values = list(chain.from_iterable(v.values() if type(v) is dict else v for v in nested))
    return False  # not reached


def encode_input(payload: Mapping[str, Any]) -> tuple[str, bytes | None]:
    """``(input_hash(payload), the payload as compact JSON)``, both from one encoding of what
    the hash covers; ``(input_hash(payload), None)`` for a payload that only ``json.dumps``
    writes canonically (see the module docstring), to be encoded as usual."""
    return _encode_plain(payload) if _plain((payload,)) else (input_hash(payload), None)


def encode_inputs(payloads: Sequence[Mapping[str, Any]]) -> list[tuple[str, bytes | None]]:
    """:func:`encode_input` of each payload; when each has exactly ``name``, ``match_by``,
    ``match_value`` and ``fields`` (as the mapper makes them), column by column
    (:func:`_encode_columns`); else the values of all of them checked at once."""
    if set(map(len, payloads)) == {4} and set(map(type, payloads)) == {dict}:
        try:
            return _encode_columns(payloads)
        except _NotPlain:  # an odd value somewhere: each payload on its own, as below
            pass
    if not _plain(payloads):
        return [encode_input(p) for p in payloads]
    return [_encode_plain(p) for p in payloads]


class _NotPlain(Exception):
    """A group :func:`_encode_columns` leaves to the payload-by-payload path."""


_name, _by, _value, _fields = map(itemgetter, ("name", "match_by", "match_value", "fields"))
_digest16 = partial(blake2b, digest_size=16)
_hexdigest = blake2b.hexdigest
_cut = itemgetter(slice(None, HASH_HEX))
_is_list = list.__instancecheck__
_BY, _VALUE, _FIELDS, _NAME = b'{"match_by":', b',"match_value":', b',"fields":', b',"name":'
_TAGGED = FORMAT_TAG + b'{"fields":'


def _encode_columns(payloads: Sequence[Mapping[str, Any]]) -> list[tuple[str, bytes | None]]:
    """:func:`_encode_plain` of dicts of exactly ``name``, ``match_by``, ``match_value`` and
    ``fields``, taken apart into columns, each column encoded in one loop in C (no loop in
    Python, no copy of a payload); raises :class:`_NotPlain` for a group with a value
    :func:`_plain` refuses or orjson cannot write.

    Per row, with ``F``, ``N``, ``B``, ``V`` the orjson texts of ``fields`` (keys sorted),
    ``name``, ``match_by`` and ``match_value``: the hashed bytes are
    ``{"fields":F,"name":N}`` (what orjson writes for ``{"fields", "name"}`` with sorted keys)
    and the body ``{"match_by":B,"match_value":V,"fields":F,"name":N}``, as in
    :func:`_encode_plain`."""
    try:
        names, bys, values, fields = (list(map(g, payloads)) for g in (_name, _by, _value, _fields))
    except KeyError:  # four keys, not these four
        raise _NotPlain from None
    if not set(map(type, chain(names, bys, values))) <= _SCALARS:
        raise _NotPlain
    if set(map(type, fields)) != {dict}:
        raise _NotPlain
    cells = list(chain.from_iterable(map(dict.values, fields)))
    types = set(map(type, cells))
    if not types <= _SCALARS:  # lists of scalars, one level, as _plain allows
        if not types <= _SCALARS_OR_LIST:
            raise _NotPlain
        if not set(map(type, chain.from_iterable(filter(_is_list, cells)))) <= _SCALARS:
            raise _NotPlain
    dumps = _dumps
    try:
        fjs = list(map(dumps, fields, repeat(None), repeat(_OPTIONS)))
        njs = list(map(dumps, names))
        vjs = list(map(dumps, values))
        if set(map(type, bys)) == {str} and len(set(bys)) == 1:  # one rule: its head once
            heads: Iterable[bytes] = repeat(_BY + dumps(bys[0]) + _VALUE)
        else:
            heads = map(b"".join, zip(repeat(_BY), map(dumps, bys), repeat(_VALUE)))
    except orjson.JSONEncodeError:  # a lone surrogate, an integer beyond 64 bits, a key
        raise _NotPlain from None
    tagged = map(b"".join, zip(repeat(_TAGGED), fjs, repeat(_NAME), njs, repeat(b"}")))
    digests = map(_cut, map(_hexdigest, map(_digest16, tagged)))
    bodies = map(b"".join, zip(heads, vjs, repeat(_FIELDS), fjs, repeat(_NAME), njs, repeat(b"}")))
    return list(zip(digests, bodies, strict=True))


def _encode_plain(payload: Mapping[str, Any]) -> tuple[str, bytes | None]:
    """:func:`encode_input` of a payload :func:`_plain` passed."""
    subset = dict(payload)  # a copy without the match keys: cheaper than a comprehension
    by, value = subset.pop("match_by", _ABSENT), subset.pop("match_value", _ABSENT)
    try:
        hashed = orjson.dumps(subset, option=_OPTIONS)
        if by is not _ABSENT and value is not _ABSENT:  # '{"match_by":…,"match_value":…'
            head = orjson.dumps({"match_by": by, "match_value": value})[:-1]
        else:
            head = b"{" + b",".join(
                f'"{k}":'.encode() + orjson.dumps(payload[k]) for k in _MATCH_KEYS if k in payload
            )
    except orjson.JSONEncodeError:
        return input_hash(payload), None
    digest = blake2b(FORMAT_TAG + hashed, digest_size=16).hexdigest()[:HASH_HEX]
    if len(hashed) == 2:  # "{}": only match keys
        return digest, head + b"}"
    return digest, (head + b"," if len(head) > 1 else head) + hashed[1:]
