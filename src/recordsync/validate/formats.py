"""String formats the service checks: email, phone and URL, as docs/sandbox.md's decisions
state them (written from those rules, not from the sandbox's code).

Each check validates the value the run sends, as the service reads it: trimmed of Unicode
whitespace (``utf8_trim_whitespace`` trims exactly the characters Python's ``str.strip``
does). Columnar (RE2) where the rule allows it; URLs go through ``urllib.parse`` once per
distinct value, after a fast path for plain ASCII URLs.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.validate.checked import Checked, bad_mask, bad_where, reasons_at
from recordsync.validate.distinct import Memo, Outcome, map_distinct, pylist

WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""Unicode whitespace (Python's ``str.isspace``): never inside an email, phone or URL.
Spelled out: computing it scans every code point, 40 ms of every start-up (a test checks it
against ``str.isspace``)."""
_WS = "".join(f"\\x{{{ord(c):x}}}" for c in WHITESPACE)
_NOT_EMAIL = rf"@{_WS}\"(),:;<>\[\\\]"
"""Characters an email address may not hold anywhere (besides its one ``@``)."""
EMAIL_RE = rf"^[^{_NOT_EMAIL}]+@[^{_NOT_EMAIL}]+\.[^{_NOT_EMAIL}.]+$"
EMAIL_MAX = 254
EMAIL_REASON = "is not a valid email address (one @, a dot in the domain, no spaces)"
PHONE_RE = r"^\+?[0-9().\-/ ]+((x|ext\.?) ?[0-9]{1,6})?$"
"""Digits, spaces, ``( ) . - /``, a leading ``+``, and an optional ``x123``/``ext 123``
extension (``ext.`` too)."""
PHONE_DIGITS = (5, 20)
"""How many digits a phone number holds (extension included), at least and at most."""
PLAIN_URL_RE = r"^(?i:https?)://[A-Za-z0-9_~-][A-Za-z0-9._~-]*(:[0-9]*)?([/?#][!-~]*)?$"
"""URLs certainly fine: ASCII, no whitespace, a plain host. Others are parsed in Python."""


def trimmed(arr: pa.Array) -> pa.Array:
    return pc.utf8_trim_whitespace(arr)


def check_email(arr: pa.Array) -> Checked:
    """Trimmed, one ``@``, a dot in the domain, no whitespace nor ``"(),:;<>[\\]``, at most
    254 characters. Sent trimmed and lower-cased (the form the service stores)."""
    low = pc.utf8_lower(trimmed(arr))
    short = pc.less_equal(pc.utf8_length(low), EMAIL_MAX)
    ok = pc.and_(pc.match_substring_regex(low, EMAIL_RE), short)
    reasons = reasons_at(bad_mask(arr, ok), EMAIL_REASON)
    if reasons is None:  # every value fine: sent as it is
        return Checked(low.to_pylist())
    too_long = bad_mask(arr, short)
    for i in too_long.nonzero()[0].tolist():
        reasons[i] = f"is not a valid email address (longer than {EMAIL_MAX} characters)"
    return Checked(pc.if_else(ok, low, None).to_pylist(), reasons)


def check_phone(arr: pa.Array) -> Checked:
    """Digits, spaces and ``+ ( ) . - /``, an optional extension, 5 to 20 digits. Sent
    trimmed."""
    text = trimmed(arr)
    counts = digit_counts(text)  # wrapped, not pa.array(): that imports numpy.ma (~8 ms)
    digits = pa.Array.from_buffers(pa.int32(), len(counts), [None, pa.py_buffer(counts)])
    ok = pc.and_(
        pc.match_substring_regex(text, PHONE_RE),
        pc.and_(
            pc.greater_equal(digits, PHONE_DIGITS[0]), pc.less_equal(digits, PHONE_DIGITS[1])
        ),
    )
    if pc.all(ok).as_py() is not False:  # every value fine (or none at all): the common case
        return Checked(pylist(text))
    low, high = PHONE_DIGITS
    reason = (
        f"is not a phone number (digits, spaces and + ( ) . - /, optional x123 or ext 123; "
        f"{low} to {high} digits)"
    )
    return Checked(pc.if_else(ok, text, None).to_pylist(), bad_where(arr, ok, reason))


def digit_counts(arr: pa.Array) -> npt.NDArray[np.int32]:
    """ASCII digits per string (0 for nulls), from one pass over the data buffer: about ten
    times faster than ``count_substring_regex``."""
    if not pa.types.is_string(arr.type):
        arr = arr.cast(pa.string())
    _, offsets_buf, data_buf = arr.buffers()
    if data_buf is None or not len(arr):
        return np.zeros(len(arr), dtype=np.int32)
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8)
    cum = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum((data - np.uint8(48)) < np.uint8(10), out=cum[1:])
    counts: npt.NDArray[np.int32] = cum[offsets[1:]] - cum[offsets[:-1]]
    return counts


URL_REASON = "is not an http(s) URL with a host (e.g. https://example.com/x)"


def _url(v: str) -> Outcome:
    text = v.strip()
    if any(c.isspace() for c in text):
        return None, URL_REASON, None
    try:
        parts = urlsplit(text)
        fine = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unbalanced [ in the host
        fine = False
    return (text, None, None) if fine else (None, URL_REASON, None)


def check_url(arr: pa.Array, memo: Memo | None = None) -> Checked:
    """``http`` or ``https`` (any case) with a host. Sent trimmed."""
    text = trimmed(arr)
    plain = pc.fill_null(pc.match_substring_regex(text, PLAIN_URL_RE), False)
    if pc.all(pc.or_(plain, pc.is_null(text))).as_py():
        return Checked(text.to_pylist())
    rest = pc.if_else(plain, pa.scalar(None, pa.string()), text)
    values, reasons, _ = map_distinct(rest, _url, memo)
    plain_rows = plain.to_numpy(zero_copy_only=False)
    if plain_rows.any():
        fast = text.to_pylist()
        values = [f if p else v for f, v, p in zip(fast, values, plain_rows.tolist(), strict=True)]
    return Checked(values, reasons)
