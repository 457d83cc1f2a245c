"""Black-box parity: the dry run's validator and the service agree on every value.

Generated cells (biased to each rule's edges) go through the pipeline's mapper (what a dry run
and the pre-send check use) and, in one batch request over HTTP, to a sandbox whose seed has one
field of each type. A row the mapper accepts is sent as the mapper built it (the value the run
would send, after its conversions); a row it rejects is sent as the cell reads in JSON (a
JSON number or boolean literal as such, a list for a multi-select, otherwise the string). The
service must accept exactly the rows the mapper accepts.

Relationship ids are drawn from the one existing company, digit strings too long for any id
and non-numbers: whether some other id exists only the service can know.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterator
from typing import Any

import httpx
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.config import load_mapping
from recordsync.map.engine import BatchMapper
from recordsync.sandbox import create_app
from recordsync.sandbox.server import run_in_thread
from recordsync.send.client import encode_batch
from recordsync.validate import Schema

KEY = "sk_live_parity_0123456789abcdef"
USER = "6f1c2a3b-0001-4000-8000-000000000001"
SEED = f"""\
users:
  - {{id: {USER}, full_name: Ada Lovelace, access_level: admin}}
object_types:
  - {{slug: contacts, display_name: Person, plural_display_name: People, fields: []}}
  - {{slug: companies, display_name: Company, plural_display_name: Companies, fields: []}}
  - slug: probes
    singular_slug: probe
    display_name: Probe
    plural_display_name: Probes
    fields:
      - {{field_name: phone, field_type: phone}}
      - {{field_name: email, field_type: email}}
      - {{field_name: website, field_type: url}}
      - field_name: score
        field_type: number
        number_min: -1000
        number_max: 1000
        number_decimal_places: 2
      - {{field_name: count, field_type: number, number_decimal_places: 0}}
      - {{field_name: amount, field_type: currency, currency_decimal_places: 2, number_min: 0}}
      - field_name: share
        field_type: percentage
        percentage_decimal_places: 1
        number_min: 0
        number_max: 100
      - {{field_name: born, field_type: date}}
      - {{field_name: seen_at, field_type: datetime}}
      - field_name: stage
        field_type: select
        select_options:
          - {{label: Lead, value: lead}}
          - {{label: Closed Won, value: closed-won}}
      - field_name: tags
        field_type: select
        allow_multiple: true
        select_options:
          - {{label: VIP, value: vip}}
          - {{label: Churn risk, value: churn-risk}}
      - {{field_name: active, field_type: boolean}}
      - field_name: company_id
        field_type: relationship
        related_object_type_id: 2
        relationship_type: many_to_one
      - {{field_name: owner, field_type: user}}
      - {{field_name: note, field_type: text}}
  - slug: musts
    display_name: Must
    plural_display_name: Musts
    fields:
      - {{field_name: code, field_type: text, is_required: true}}
      - field_name: level
        field_type: select
        is_required: true
        default_value: low
        select_options: [{{label: Low, value: low}}, {{label: High, value: high}}]
      - field_name: labels
        field_type: select
        allow_multiple: true
        is_required: true
        select_options: [{{label: Red, value: red}}]
"""
MUSTS = ("code", "level", "labels")
FIELDS = [
    *("phone", "email", "website", "score", "count", "amount", "share", "born", "seen_at"),
    *("stage", "tags", "active", "company_id", "owner", "note"),
]
NUMBERS = frozenset({"score", "count", "amount", "share"})
JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


class Probe:
    def __init__(self, url: str, company: int, mapper: BatchMapper) -> None:
        self.url, self.company, self.mapper = url, company, mapper
        self.musts: dict[str, BatchMapper] = {}  # by the `empty` option of every field


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probe]:
    tmp = tmp_path_factory.mktemp("parity")
    (tmp / "seed.yaml").write_text(SEED)
    app = create_app(tmp / "s.db", seed=tmp / "seed.yaml", api_key=KEY)
    try:
        with run_in_thread(app) as url, httpx.Client(headers={"x-api-key": KEY}) as http:
            company = http.put(f"{url}/api/objects/companies", json={"name": "Acme"})
            schema = http.get(f"{url}/api/meta/schema").json()["data"]
            users = http.get(f"{url}/api/meta/users").json()["data"]
            lines = "\n".join(f"  {f}: {f}" for f in FIELDS)
            (tmp / "m.yaml").write_text(
                f"object_type: probes\nsource: {{path: x.csv}}\nname: Name\nfields:\n{lines}\n"
            )
            mapper = BatchMapper(
                load_mapping(tmp / "m.yaml"),
                base_dir=tmp,
                schema=Schema.from_api(schema),
                users=users,
            )
            probe = Probe(url, company.json()["data"]["id"], mapper)
            for empty in ("omit", "null"):
                specs = ", ".join(f"{f}: {{column: {f}, empty: '{empty}'}}" for f in MUSTS)
                path = tmp / f"musts-{empty}.yaml"
                path.write_text(
                    f"object_type: musts\nsource: {{path: x.csv}}\nname: Name\n"
                    f"fields: {{{specs}}}\n"
                )
                probe.musts[empty] = BatchMapper(
                    load_mapping(path), base_dir=tmp, schema=Schema.from_api(schema), users=users
                )
            yield probe
    finally:
        app.state.store.close()


def as_json(field: str, cell: str) -> Any:
    """The cell as JSON reads it: what a rejected row is sent as."""
    text = cell.strip()
    if field in NUMBERS or field == "company_id":
        if JSON_NUMBER.fullmatch(text):
            value = json.loads(text)
            if not isinstance(value, float) or abs(value) != float("inf"):
                return value
        return cell
    if field == "active" and text in ("true", "false"):
        return text == "true"
    if field == "tags":
        return [p.strip() for p in cell.split(",") if p.strip()]
    return cell


# --- cells, biased to each rule's edges ---------------------------------------------------

TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)))
ODD = st.sampled_from(["", " ", "\u3000", "\t", "\u00a0", "é", "١", "２", "\u200b", "\n"])


def _digits(n: int) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from("0123456789"), min_size=n, max_size=n)


@st.composite
def phones(draw: st.DrawFn) -> str:
    n = draw(st.sampled_from([0, 3, 4, 5, 6, 10, 15, 19, 20, 21, 22]))
    seps = draw(st.lists(st.sampled_from(" ()-./"), max_size=4))
    body = list(draw(_digits(n)))
    for s in seps:
        body.insert(draw(st.integers(0, len(body))), s)
    plus = draw(st.sampled_from(["", "+", "+ ", "++", "00"]))
    ext = draw(
        st.sampled_from(
            ["", "", "x1", "x123456", "x1234567", " x 12", "ext 123", "ext.4", "ext. 56", "ext",
             "X12", " #12", "x", "ext  1", "e12"]
        )
    )
    pad = draw(st.sampled_from(["", " ", "  \t", "\u3000"]))
    return pad + plus + "".join(body) + ext + draw(ODD | st.just("")) * draw(st.booleans())


@st.composite
def emails(draw: st.DrawFn) -> str:
    part = st.text(
        st.sampled_from(string.ascii_letters + string.digits + ".-_+@ \"(),:;<>[]\\éß\u3000"),
        min_size=0,
        max_size=8,
    )
    local = draw(part | st.just("ann"))
    at = draw(st.sampled_from(["@", "@", "@@", "", " @"]))
    host = draw(part | st.sampled_from(["x.io", "mail.example.com", "localhost", "x.", ".x"]))
    email = f"{local}{at}{host}"
    if draw(st.booleans()):  # near the 254-character limit
        email = "a" * draw(st.integers(240, 252)) + "@x." + draw(st.sampled_from(["io", "com"]))
    return draw(st.sampled_from(["", " ", "\u2003"])) + email


@st.composite
def urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http://", "https://", "HTTPS://", "ftp://", "", "http:/",
                                   "https:///", "http:", "mailto:"]))
    host = draw(st.sampled_from(["x.example", "localhost", "[::1]", "[::1", "", "a b", "é.fr",
                                 "u:p@h.io", "h:80", "h:abc", "-", "_", "%41.io", "."]))
    rest = draw(st.sampled_from(["", "/", "/a b", "?q=1", "#f", "/ä", "/[x]", "\t"]))
    return draw(st.sampled_from(["", " ", "\x01"])) + scheme + host + rest


@st.composite
def numbers(draw: st.DrawFn) -> str:
    places = draw(st.integers(0, 4))
    whole = draw(st.sampled_from([0, 1, 7, 99, 100, 999, 1000, 1001, 12345678, 2**40]))
    frac = draw(_digits(places))
    sign = draw(st.sampled_from(["", "-", "+"]))
    num = f"{sign}{whole}" + (f".{frac}" if places else "")
    return draw(
        st.sampled_from([num, num, f"{num}e2", f"{num}E-3", f"${num}", f"{num}%", f" {num} "])
        | st.sampled_from(["1e999", "-0", "1.", ".5", "0.1", "1,5", "abc", "٥", "NaN", "inf",
                           "12345678901234567890", "9007199254740993", "1e20", "1e-7", "1_0",
                           "1000.001", "999.995", "100.05", "99.95", "0.000", "123456789.001",
                           "12345678.005", "99.9999999999"])
        | st.floats(allow_nan=False, allow_infinity=False).map(repr)
    )


@st.composite
def dates(draw: st.DrawFn) -> str:
    return draw(
        st.dates().map(lambda d: d.isoformat())
        | st.sampled_from(["2026-02-29", "2024-02-29", "2026-13-01", "2026-04-31", "2026-1-1",
                           "26-01-01", "2026/01/01", "01/02/2026", "２０２６-０１-０１",
                           "0001-01-01", "9999-12-31", "2026-01-01T00:00", " 2026-01-05 ",
                           "20260101", "2026-W01-1"])
    )


@st.composite
def datetimes(draw: st.DrawFn) -> str:
    dt = draw(st.datetimes())
    sep = draw(st.sampled_from(["T", " ", "t", "_"]))
    secs = draw(st.sampled_from(["", f":{dt.second:02d}", f":{dt.second:02d}.5",
                                 f":{dt.second:02d}.123456789", f":{dt.second:02d}.1234567890"]))
    off = draw(st.sampled_from(["", "Z", "z", "+05:30", "+0530", "-23:59", "+24:00", "+05",
                                "+05:30:15", " UTC"]))
    text = f"{dt.date().isoformat()}{sep}{dt.hour:02d}:{dt.minute:02d}{secs}{off}"
    return draw(
        st.just(text)
        | st.sampled_from(["2026-01-01", "2026-01-01T25:00", "0001-01-01T00:00:00+01:00",
                           "9999-12-31T23:59:59-01:00", "2026-02-29T10:00:00Z", "2026-01-01T10",
                           "20260101T101010", "2026-01-01T10:00:00,5Z", "٢٠٢٦-٠١-٠١T10:00Z"])
    )


def cells(company: int) -> st.SearchStrategy[tuple[str, str]]:
    by_field: dict[str, st.SearchStrategy[str]] = {
        "phone": phones() | TEXT,
        "email": emails() | TEXT,
        "website": urls() | TEXT,
        "score": numbers(),
        "count": numbers(),
        "amount": numbers(),
        "share": numbers(),
        "born": dates() | TEXT,
        "seen_at": datetimes() | TEXT,
        "stage": st.sampled_from(["lead", "Lead", " LEAD ", "closed-won", "Closed Won", "won",
                                  "Léad", "lead,closed-won"]) | TEXT,
        "tags": st.sampled_from(["vip", "VIP, churn-risk", "vip,,", "Churn Risk", "gold",
                                 "vip, gold", ",", "vip;churn-risk"]) | TEXT,
        "active": st.sampled_from(["true", "false", "TRUE", " yes ", "no", "1", "0", "y",
                                   "maybe", "2"]) | TEXT,
        "company_id": st.sampled_from([str(company), f"00{company}", f" {company} ", "x1",
                                       "1.0", "-1", "12345678901234567890", "99999999999999999999",
                                       f"+{company}", "٣"]),
        "owner": st.sampled_from([USER, USER.upper(), f" {USER} ",
                                  "6f1c2a3b-0009-4000-8000-000000000009", "ada"]) | TEXT,
        "note": TEXT,
    }
    return st.sampled_from(FIELDS).flatmap(
        lambda f: by_field[f].map(lambda c: (f, c))  # type: ignore[misc]
    )


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_the_dry_run_accepts_exactly_what_the_service_accepts(
    probe: Probe, data: st.DataObject
) -> None:
    rows = data.draw(st.lists(cells(probe.company), min_size=1, max_size=40), label="rows")
    columns = {"Name": ["probe"] * len(rows)}
    for f in FIELDS:
        columns[f] = [cell if field == f else None for field, cell in rows]
    strings = pa.schema([(c, pa.string()) for c in columns])
    batch = pa.RecordBatch.from_pydict(columns, schema=strings)
    mapped = probe.mapper.map_batch(batch)
    entries = [
        mapped.payloads[i] if error is None else {"name": "probe", "fields": {f: as_json(f, c)}}
        for i, ((f, c), error) in enumerate(zip(rows, mapped.errors, strict=True))
    ]
    answer = httpx.post(
        f"{probe.url}/api/objects/probes/batch",
        content=encode_batch(entries),
        headers={"x-api-key": KEY, "content-type": "application/json"},
    )
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    mismatches = [
        f"{f} {c!r}: dry run {mapped.errors[i] or 'ok'}; sent {json.dumps(entries[i]['fields'])};"
        f" service {r.get('error') or r['status']}"
        for i, ((f, c), r) in enumerate(zip(rows, results, strict=True))
        if (mapped.errors[i] is None) != (r["status"] != "failed")
    ]
    assert not mismatches, "\n".join(mismatches)
    changed = [  # an accepted JSON-number cell is sent as that number (no digit dropped)
        f"{f} {c!r} sent as {entries[i]['fields'][f]!r}"
        for i, (f, c) in enumerate(rows)
        if f in NUMBERS
        and mapped.errors[i] is None
        and JSON_NUMBER.fullmatch(c.strip())
        and float(json.loads(c.strip())) != entries[i]["fields"][f]
    ]
    assert not changed, "\n".join(changed)


def post_batch(probe: Probe, object_type: str, entries: list[dict[str, Any]]) -> list[Any]:
    answer = httpx.post(
        f"{probe.url}/api/objects/{object_type}/batch",
        content=encode_batch(entries),
        headers={"x-api-key": KEY, "content-type": "application/json"},
    )
    assert answer.status_code == 200, answer.text
    results: list[Any] = answer.json()["results"]
    return results


MUST_CELLS = st.fixed_dictionaries(
    {
        "code": st.sampled_from([None, "", " ", "A1"]),
        "level": st.sampled_from([None, "", "\t", "high", "High", "max"]),
        "labels": st.sampled_from([None, "", " , ", "red", "Red, red", "blue"]),
    }
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(MUST_CELLS, min_size=1, max_size=30), empty=st.sampled_from(["omit", "null"]))
def test_required_fields_and_defaults_on_create_agree_with_the_service(
    probe: Probe, rows: list[dict[str, str | None]], empty: str
) -> None:
    strings = pa.schema([(c, pa.string()) for c in ("Name", *MUSTS)])
    columns = {"Name": ["must"] * len(rows), **{f: [r[f] for r in rows] for f in MUSTS}}
    mapped = probe.musts[empty].map_batch(pa.RecordBatch.from_pydict(columns, schema=strings))

    def as_read(row: dict[str, str | None]) -> dict[str, Any]:
        cells = {f: c for f, c in row.items() if c is not None and c.strip()}
        blank = dict.fromkeys(set(MUSTS) - set(cells)) if empty == "null" else {}
        read = {f: as_json("tags" if f == "labels" else f, c) for f, c in cells.items()}
        return {**blank, **read}

    entries = [
        mapped.payloads[i] if error is None else {"name": "must", "fields": as_read(row)}
        for i, (row, error) in enumerate(zip(rows, mapped.errors, strict=True))
    ]
    results = post_batch(probe, "musts", entries)
    mismatches = [
        f"{row}: dry run {mapped.errors[i] or 'ok'}; service {r.get('error') or r['status']}"
        for i, (row, r) in enumerate(zip(rows, results, strict=True))
        if (mapped.errors[i] is None) != (r["status"] != "failed")
    ]
    assert not mismatches, "\n".join(mismatches)
