"""Dates and datetimes: strict parsing, ambiguity reports, ISO 8601 UTC output."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.config.models import FieldSpec
from recordsync.validate.checked import Checked
from recordsync.validate.distinct import Memo, Outcome, map_distinct

ISO_DATE_RE = r"^\d{4}-\d{2}-\d{2}$"
MIDNIGHT_RE = re.compile(
    r"(\d{4}-\d{2}-\d{2})[T ]00:00(?::00(?:\.0{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?"
)
"""An ISO datetime at midnight (``1996-07-04 00:00:00.000``): a date as exports write it
(its zone, if any, kept out: the date is the one written)."""
FRACTION_RE = re.compile(r"(.*\d)\.(\d{1,9})")
"""A value ending in a fraction of a second: what a format ending in ``%S`` also reads."""


def parse_with_fraction(v: str, fmt: str) -> datetime:
    """``datetime.strptime(v, fmt)``; a format that ends in seconds (``%S``) also reads a
    fraction of a second after them (``.000``, up to nanoseconds: microseconds kept), as
    timestamps are written. Raises ValueError as strptime does."""
    try:
        return datetime.strptime(v, fmt)
    except ValueError:
        m = FRACTION_RE.fullmatch(v) if fmt.endswith("%S") else None
        if m is None:
            raise
        micro = int(m.group(2)[:6].ljust(6, "0"))
        return datetime.strptime(m.group(1), fmt).replace(microsecond=micro)
GUESS_DATE_FORMATS = (
    "%d/%m/%Y",
    "%m/%d/%Y",
    "%d.%m.%Y",
    "%Y/%m/%d",
    "%d-%m-%Y",
    "%m-%d-%Y",
    "%d %b %Y",
    "%b %d, %Y",
    "%Y%m%d",
)


def _date_readings(v: str) -> list[tuple[str, str]]:
    out = []
    for fmt in GUESS_DATE_FORMATS:
        try:
            out.append((datetime.strptime(v, fmt).date().isoformat(), fmt))
        except ValueError:
            continue
    return out


def _date_reason(v: str) -> Outcome:
    readings = _date_readings(v)
    dates = sorted({d for d, _ in readings})
    if len(dates) > 1:
        alts = " or ".join(f"{d} ({f})" for d, f in readings if d in dates)
        return None, (f"is ambiguous: reads as {alts}; declare date_format for this field"), None
    if dates:
        fmt = readings[0][1]
        return (
            None,
            (
                f"is not a YYYY-MM-DD date; it reads as {dates[0]} with "
                f"date_format: '{fmt}' — declare it"
            ),
            {"date_format": fmt},
        )
    return None, "is not a date (YYYY-MM-DD, or declare date_format)", None


def check_date(arr: pa.Array, spec: FieldSpec, memo: Memo | None = None) -> Checked:
    """Dates, parsed strictly once per distinct value (31/02 is an error, not 3 March).
    Without a format, an ISO datetime at midnight is its date (a timestamp column's dates)."""
    fmt = spec.date_format or spec.datetime_format

    def one(v: str) -> Outcome:
        if fmt is not None:
            try:
                return parse_with_fraction(v, fmt).date().isoformat(), None, None
            except ValueError:
                return None, f"does not match date_format '{fmt}' (or is no such date)", None
        midnight = MIDNIGHT_RE.fullmatch(v)
        if midnight is not None:
            v = midnight.group(1)
        if re.fullmatch(ISO_DATE_RE, v):
            try:
                return datetime.strptime(v, "%Y-%m-%d").date().isoformat(), None, None
            except ValueError:
                return None, "is no such date", None
        return _date_reason(v)

    return Checked(*map_distinct(arr, one, memo))


def check_datetime(arr: pa.Array, spec: FieldSpec, memo: Memo | None = None) -> Checked:
    """Datetimes → ISO 8601 UTC (``Z``). Naive values are in ``timezone`` (default UTC)."""
    tz = spec.timezone or "UTC"
    zone = ZoneInfo(tz)
    fmt = spec.datetime_format or spec.date_format

    def strict(v: str) -> Outcome:
        try:
            dt = parse_with_fraction(v, fmt) if fmt else datetime.fromisoformat(v)
        except ValueError:
            reason = (
                f"does not match datetime_format '{fmt}'"
                if fmt
                else "is not an ISO 8601 datetime (or declare datetime_format)"
            )
            return None, reason, None
        try:
            aware, why = (dt, None) if dt.tzinfo is not None else in_zone(dt, zone, tz, spec)
            if aware is None:
                return None, why, None
            utc = aware.astimezone(UTC)
        except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00 is before year 1 in UTC
            return None, "is out of range (before year 1 or after 9999 in UTC)", None
        return utc_text(utc), None, None

    if fmt is None:
        return Checked(*map_distinct(arr, strict, memo))
    # Vectorised parse. pyarrow's strptime normalises an impossible day or a leap second
    # instead of failing, so the results it may have rolled over (see _suspects) and all parse
    # failures are re-checked strictly in Python, once per distinct value.
    ts = pc.strptime(arr, format=fmt, unit="s", error_is_null=True)
    suspect = _suspects(ts, fmt)
    # of those, a value that formats back to itself is fine (strftime only on the few)
    idx = pc.indices_nonzero(suspect)
    if len(idx):
        sub_ts, sub_in = pc.take(ts, idx), pc.take(arr, idx)
        same = pc.fill_null(pc.equal(pc.strftime(sub_ts, format=fmt), sub_in), False)
        fine = pc.take(idx, pc.indices_nonzero(same)).to_numpy()
        if len(fine):
            mask = suspect.to_numpy(zero_copy_only=False).copy()
            mask[fine] = False
            suspect = pa.array(mask)
    if ts.type.tz is None and tz != "UTC":
        # a local time in a gap or fold has two readings: it goes the strict way, which
        # applies nonexistent_time / ambiguous_time as for values without datetime_format
        late = pc.assume_timezone(ts, tz, ambiguous="latest", nonexistent="latest")
        ts = pc.assume_timezone(ts, tz, ambiguous="earliest", nonexistent="earliest")
        suspect = pc.or_(suspect, pc.fill_null(pc.not_equal(ts, late), False))
    elif ts.type.tz is None:
        ts = pc.assume_timezone(ts, tz)
    fast = iso_utc(ts).to_pylist()
    # the suspects with a value go the strict way (a blank is no value either way)
    mask = pc.and_(suspect, pc.is_valid(arr)).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(mask)
    if not len(rows):
        return Checked(fast)
    values, why, _ = map_distinct(arr.take(pa.array(rows)), strict, memo)
    at = rows.tolist()
    for i, v in zip(at, values, strict=True):
        fast[i] = v
    if why is None:
        return Checked(fast)
    reasons: list[str | None] = [None] * len(fast)
    for i, r in zip(at, why, strict=True):
        reasons[i] = r
    return Checked(fast, reasons)


def in_zone(
    local: datetime, zone: ZoneInfo, tz: str, spec: FieldSpec
) -> tuple[datetime | None, str | None]:
    """A local time of ``zone`` as an aware datetime, or None and why: a time the clocks
    skipped (a daylight-saving gap) or passed twice (a fold) is invalid unless the spec says
    how to read it (``nonexistent_time: shift_forward``: as if the clocks had not moved yet,
    i.e. later by the gap, 02:30 → 03:30; ``ambiguous_time: earlier|later``: the first or the
    second of the two). Raises OverflowError at the ends of the calendar."""
    first, second = local.replace(tzinfo=zone, fold=0), local.replace(tzinfo=zone, fold=1)
    if first.utcoffset() == second.utcoffset():
        return first, None
    if first.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != local:  # a gap
        if spec.nonexistent_time == "shift_forward":
            return first, None
        return None, (
            f"does not exist in {tz} (skipped when the clocks went forward); declare "
            f"nonexistent_time: shift_forward to read it as {utc_text(first.astimezone(UTC))}"
        )
    if spec.ambiguous_time != "invalid":
        return (first if spec.ambiguous_time == "earlier" else second), None
    readings = " or ".join(utc_text(d.astimezone(UTC)) for d in (first, second))
    return None, (
        f"is ambiguous in {tz} (passed twice when the clocks went back): {readings}; "
        "declare ambiguous_time: earlier or later"
    )


def utc_text(dt: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS[.mmm]Z`` with a 4-digit year (``strftime("%Y")`` does not pad
    years before 1000 on every platform, and the service takes only 4 digits). Milliseconds
    are kept when the value has a fraction (the service stores milliseconds)."""
    text = (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    )
    return f"{text}.{dt.microsecond // 1000:03d}Z" if dt.microsecond else f"{text}Z"


SECONDS_DIRECTIVES = ("%S", "%T", "%r", "%c", "%X")
"""strptime directives that read seconds (then :60 and :61 may have been read)."""
ROLLED_TO_DAY_1 = (5, 7, 10, 12)
"""Months whose 1st an impossible 31st of the month before (30 days) rolls over to."""


def _suspects(ts: pa.Array, fmt: str) -> pa.Array:
    """Rows whose timestamp pyarrow's ``strptime`` may have rolled over instead of failing
    (or that did not parse): an impossible day becomes a day of the next month (Feb 29-31 →
    Mar 1-3, Apr/Jun/Sep/Nov 31 → May/Jul/Oct/Dec 1), a leap second the next minute
    (``:60`` → ``:00``, ``:61`` → ``:01``). With ``%z`` the day is UTC's, not the written
    one, and days 1-3 of every month are checked (an offset that moves a rolled-over day
    out of them still goes unnoticed)."""
    day = pc.day(ts)
    if ts.type.tz is None:
        month = pc.month(ts)
        rolled = pc.or_(
            pc.and_(pc.equal(month, 3), pc.less_equal(day, 3)),
            pc.and_(pc.equal(day, 1), pc.is_in(month, pa.array(ROLLED_TO_DAY_1, pa.int64()))),
        )
    else:
        rolled = pc.less_equal(day, 3)
    if any(d in fmt for d in SECONDS_DIRECTIVES):
        rolled = pc.or_(rolled, pc.less_equal(pc.second(ts), 1))
    return pc.fill_null(rolled, True)


def iso_utc(ts: pa.Array) -> pa.Array:
    """Timestamps (tz-aware) → ``YYYY-MM-DDTHH:MM:SSZ`` strings, without slow strftime.

    Arrow writes a timestamp as ``YYYY-MM-DD HH:MM:SS`` (years 1 to 9999 with four digits);
    when every value has those 19 characters, the ``T`` and the ``Z`` are put in place in one
    copy of the bytes (half the time of a replace and a join); else through those two."""
    naive = pc.cast(pc.cast(ts, pa.timestamp("s", "UTC")), pa.timestamp("s"))
    fast = _fixed_width_iso(naive)
    if fast is not None:
        return fast
    text = pc.replace_substring(pc.cast(naive, pa.string()), " ", "T")
    return pc.binary_join_element_wise(text, pa.scalar("Z"), pa.scalar(""))


_ISO_WIDTH = len("YYYY-MM-DD HH:MM:SS")


def _fixed_width_iso(naive: pa.Array) -> pa.Array | None:
    """:func:`iso_utc` of ``naive`` (timestamps in seconds, no zone) when Arrow writes each
    in 19 bytes; None otherwise."""
    n = len(naive)
    if n == 0:
        return None
    nulls = naive.null_count
    filled = pc.fill_null(naive, pa.scalar(0, naive.type)) if nulls else naive
    text = pc.cast(filled, pa.string())
    _, offsets_buf, data_buf = text.buffers()
    if data_buf is None:
        return None
    offsets = np.frombuffer(offsets_buf, dtype=np.int32, count=n + 1, offset=text.offset * 4)
    if not (np.diff(offsets) == _ISO_WIDTH).all():
        return None
    start = int(offsets[0])
    raw = np.frombuffer(data_buf, dtype=np.uint8, count=n * _ISO_WIDTH, offset=start)
    out = np.empty((n, _ISO_WIDTH + 1), dtype=np.uint8)
    out[:, :_ISO_WIDTH] = raw.reshape(n, _ISO_WIDTH)
    out[:, 10] = ord("T")
    out[:, _ISO_WIDTH] = ord("Z")
    ends = np.arange(0, (n + 1) * (_ISO_WIDTH + 1), _ISO_WIDTH + 1, dtype=np.int32)
    iso = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(ends), pa.py_buffer(out)])
    return pc.if_else(pc.is_valid(naive), iso, pa.scalar(None, pa.string())) if nulls else iso
