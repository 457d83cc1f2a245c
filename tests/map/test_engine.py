"""BatchMapper: the first pass's keys are the second pass's keys; memos are invisible in
the output."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.config import load_mapping
from recordsync.map.engine import BatchMapper
from recordsync.validate.schema import FieldDef, ObjectType, Schema, SelectOption

MAPPING = """\
object_type: contacts
source: {path: x.csv}
name: {template: "{First} {Last}"}
match_by: [email, {by: id, column: Id}, name]
fields:
  email: Email
  job_title: Title
  phone: {column: Phone, default: "+1 555 0100"}
  last_contacted: {column: Seen, date_format: "%d/%m/%Y"}
"""

CELLS = {
    "First": st.sampled_from(["Ann", " Bob", "", "  "]),
    "Last": st.sampled_from(["Lee", "", "Cruz "]),
    "Email": st.sampled_from(["ann@x.io", "ANN@x.io", "bad@", "", " b@y.org "]),
    "Id": st.sampled_from(["", "7", "0", "x1", "0042"]),
    "Title": st.sampled_from(["CTO", " CTO ", "", "VP, Sales"]),
    "Phone": st.sampled_from(["+1 555 0199", "", "  "]),
    "Seen": st.sampled_from(["01/02/2025", "31/02/2025", "", "2025-01-01"]),
}


def mapper(tmp_path: Path) -> BatchMapper:
    (tmp_path / "m.yaml").write_text(MAPPING)
    return BatchMapper(
        load_mapping(tmp_path / "m.yaml"), base_dir=tmp_path, schema=None, users=None
    )


rows_st = st.lists(st.fixed_dictionaries(CELLS), min_size=1, max_size=40)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=rows_st)
def test_first_pass_keys_equal_mapped_keys(tmp_path: Path, rows: list[dict[str, str]]) -> None:
    m = mapper(tmp_path)
    batch = pa.RecordBatch.from_pylist(rows)
    assert m.keys_only(batch) == m.map_batch(batch).keys


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=rows_st)
def test_key_hashes_are_equal_exactly_when_keys_are(
    tmp_path: Path, rows: list[dict[str, str]]
) -> None:
    m = mapper(tmp_path)
    batch = pa.RecordBatch.from_pylist(rows)
    keys = m.keys_only(batch)
    hashes, has = m.key_hashes(batch)
    assert has.tolist() == [k is not None for k in keys]
    assert not hashes[~has].any()
    by_key = {k: h for k, h in zip(keys, hashes.tolist(), strict=True) if k is not None}
    assert len(set(by_key.values())) == len(by_key)  # distinct keys, distinct hashes
    for k, h in zip(keys, hashes.tolist(), strict=True):
        assert k is None or by_key[k] == h


def test_memo_keeps_outcomes_across_batches_without_changing_them(tmp_path: Path) -> None:
    m = mapper(tmp_path)
    one = pa.RecordBatch.from_pylist(
        [dict.fromkeys(CELLS, "") | {"First": "Ann", "Seen": "31/02/2025"}]
    )
    first = m.map_batch(one).errors
    assert "31/02/2025" in m._memos["last_contacted"]
    again = m.map_batch(one).errors
    assert first == again and "does not match date_format" in (first[0] or "")


NUMBERS = """\
object_type: companies
source: {path: x.csv}
name: Name
fields:
  revenue: {column: Revenue, decimal_separator: ",", thousands_separator: "."}
"""


def number_mapper(tmp_path: Path) -> BatchMapper:
    (tmp_path / "n.yaml").write_text(NUMBERS)
    return BatchMapper(
        load_mapping(tmp_path / "n.yaml"), base_dir=tmp_path, schema=None, users=None
    )


def test_a_misplaced_thousands_separator_fails_the_row_quoting_the_cell(tmp_path: Path) -> None:
    batch = pa.RecordBatch.from_pydict(
        {"Name": ["A", "B", "C"], "Revenue": ["1.234,56", "1,234.56", "12.34"]}
    )
    out = number_mapper(tmp_path).map_batch(batch)
    assert out.payloads[0]["fields"]["revenue"] == 1234.56
    reason = (
        "is not a number (decimal separator ',', thousands separator '.' only between groups "
        "of three digits: 1.234.567,89)"
    )
    assert out.errors == [
        None,
        f"column 'Revenue' → field 'revenue': '1,234.56' {reason}",
        f"column 'Revenue' → field 'revenue': '12.34' {reason}",
    ]


def test_a_column_holding_numbers_ignores_the_text_separators(tmp_path: Path) -> None:
    for revenue in (pa.array([1234.5, 0.25]), pa.array([1234, 7], pa.int64())):
        batch = pa.RecordBatch.from_arrays([pa.array(["A", "B"]), revenue], ["Name", "Revenue"])
        out = number_mapper(tmp_path).map_batch(batch)
        assert out.errors == [None, None]
        assert [p["fields"]["revenue"] for p in out.payloads] == revenue.to_pylist()


TAGS = """\
object_type: contacts
source: {path: x.csv}
name: Name
fields:
  tags:
    column: Tags
    split: ";"
    value_map:
      Very Important: vip
      Partner Co: partner
      Both: [vip, press]
      "Old; Legacy": [partner]
      ignore: null
"""


def tags_mapper(tmp_path: Path) -> BatchMapper:
    options = tuple(SelectOption(v, v.upper()) for v in ("vip", "partner", "press"))
    fdef = FieldDef("tags", "select", allow_multiple=True, options=options)
    otype = ObjectType(None, "contacts", "Contacts", "contact", {"tags": fdef})
    (tmp_path / "t.yaml").write_text(TAGS)
    return BatchMapper(
        load_mapping(tmp_path / "t.yaml"),
        base_dir=tmp_path,
        schema=Schema({"contacts": otype}, {}),
        users=None,
    )


def test_a_multi_select_value_map_applies_to_each_item(tmp_path: Path) -> None:
    """Each item is mapped after splitting (no need to list every combination); a key that
    holds the separator still maps the whole cell; an item mapped to null is left out."""
    cells = [
        "Very Important; Partner Co",
        "partner co;very important;press",
        "Old; Legacy",
        "VIP; ignore",
        "Very Important; Unknown",
        "both; partner co",
    ]
    batch = pa.RecordBatch.from_pydict({"Name": list("abcdef"), "Tags": cells})
    out = tags_mapper(tmp_path).map_batch(batch)
    got = [p["fields"]["tags"] if p is not None else None for p in out.payloads]
    assert got[:4] == [["vip", "partner"], ["partner", "vip", "press"], ["partner"], ["vip"]]
    assert out.errors[:4] == [None] * 4
    assert "'Unknown' is not an option" in (out.errors[4] or "")
    assert got[5] == ["vip", "press", "partner"]  # a list target: its items


SLICED = """\
object_type: contacts
source: {path: x.csv}
name: {template: "{First} {Last}"}
match_by: [email, {by: id, column: Id}, name]
profile_image_url: Pic
fields:
  email: Email
  stage: Stage
  last_contacted: {column: Seen, date_format: "%d/%m/%Y"}
"""
SLICED_CELLS = {
    **{k: CELLS[k] for k in ("First", "Last", "Email", "Id", "Seen")},
    "Pic": st.sampled_from(["", "https://x.io/a.png", "not a url", "  "]),
    "Stage": st.sampled_from(["lead", "leads", "customer", "", "cust0mer"]),
}


def sliced_mapper(tmp_path: Path) -> BatchMapper:
    options = tuple(SelectOption(v, v.title()) for v in ("lead", "customer"))
    fields = {
        "email": FieldDef("email", "email"),
        "stage": FieldDef("stage", "select", options=options),
        "last_contacted": FieldDef("last_contacted", "date"),
    }
    otype = ObjectType(None, "contacts", "Contacts", "contact", fields)
    (tmp_path / "s.yaml").write_text(SLICED)
    return BatchMapper(
        load_mapping(tmp_path / "s.yaml"),
        base_dir=tmp_path,
        schema=Schema({"contacts": otype}, {}),
        users=None,
    )


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.fixed_dictionaries(SLICED_CELLS), min_size=1, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=4),
)
def test_a_batch_mapped_once_gives_each_slice_the_rows_its_own_mapping_gives(
    tmp_path: Path, rows: list[dict[str, str]], cuts: list[int]
) -> None:
    """A sending run maps a read batch once and builds its rows a slice at a time: each
    slice's rows (inputs, errors, hints, keys, owners) are those of mapping the slice."""
    m = sliced_mapper(tmp_path)
    batch = pa.RecordBatch.from_pylist(rows)
    n = batch.num_rows
    columns = m.map_columns(batch)
    assert len(columns) == n
    assert columns.rows() == m.map_batch(batch)
    bounds = sorted({0, n, *(c for c in cuts if c <= n)})
    for start, stop in pairwise(bounds):
        part = columns.rows(start, stop)
        assert part == m.map_batch(batch.slice(start, stop - start))
        assert len({id(p) for p in part.payloads}) == stop - start  # every row its own dict


def test_a_slice_of_mapped_columns_keeps_its_hints_and_images(tmp_path: Path) -> None:
    rows = [
        {"First": "A", "Last": "B", "Email": "a@x.io", "Id": "", "Seen": "", "Pic": "", "Stage": s}
        for s in ("lead", "lead", "leads", "customer")
    ]
    rows[3]["Pic"] = "https://x.io/a.png"
    part = sliced_mapper(tmp_path).map_columns(pa.RecordBatch.from_pylist(rows)).rows(2, 4)
    assert set(part.hints) == {0}
    assert part.hints[0]["field"] == "stage"
    assert "profile_image_url" not in part.payloads[0]
    assert part.payloads[1]["profile_image_url"] == "https://x.io/a.png"
