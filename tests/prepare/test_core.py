"""prepare_step end to end: sample files, the seed schema (from the sandbox), statuses."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.config import load_mapping, load_pipeline
from recordsync.core.errors import ConfigError, SourceError
from recordsync.core.model import PreparedRow, RowStatus
from recordsync.prepare import prepare_step
from recordsync.sandbox import create_app
from recordsync.tuning import sizes
from recordsync.validate import Schema

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
ADA = "6f1c2a3b-0001-4000-8000-000000000001"


@pytest.fixture(scope="module")
def meta(tmp_path_factory: pytest.TempPathFactory) -> tuple[Schema, list[dict[str, Any]]]:
    app = create_app(tmp_path_factory.mktemp("sb") / "db.sqlite", api_key="sk_live_prep")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # starlette's httpx deprecation notice at import
        from starlette.testclient import TestClient
    with TestClient(app, headers={"x-api-key": "sk_live_prep"}) as c:
        schema = Schema.from_api(c.get("/api/meta/schema").json()["data"])
        users = c.get("/api/meta/users").json()["data"]
    app.state.store.close()
    return schema, users


def prepare(name: str, meta: tuple[Schema, list[dict[str, Any]]]) -> dict[int, PreparedRow]:
    rows = list(
        prepare_step(
            load_mapping(CONFIGS / f"{name}.yaml"), base_dir=CONFIGS, schema=meta[0], users=meta[1]
        )
    )
    lines = [r.source.source_row for r in rows]
    assert lines == sorted(lines), "rows must come in source order"
    return {r.source.source_row: r for r in rows}


def test_contacts_sample(meta: tuple[Schema, list[dict[str, Any]]]) -> None:
    rows = prepare("contacts", meta)
    assert len(rows) == 501  # 500 rows + 1 malformed line, none dropped
    statuses = Counter(r.status for r in rows.values())
    assert statuses[RowStatus.DUPLICATE] == 1
    assert statuses[RowStatus.INVALID] == 9
    ok = rows[3]
    assert ok.status is RowStatus.VALID and ok.payload is not None
    assert ok.payload["name"] == "Ann Weber"
    assert ok.payload["match_by"] == "email" and ok.key == "email:ann.weber1@tidal.com"
    f = ok.payload["fields"]
    assert f["lifecycle_stage"] == "qualified" and f["newsletter_opt_in"] is False
    assert f["last_contacted"] == "2025-06-20" and f["signed_up_at"] == "2024-12-20T21:03:00Z"
    assert f["tags"] == ["newsletter"] and f["lead_score"] == 28
    assert ok.owner_resolution == "users:email"
    assert ok.source.values["Owner"] == "  Chloe@acme.example "
    assert rows[12].error == (
        "column 'Email' → field 'email': 'john.doe@' is not a valid email address "
        "(one @, a dot in the domain, no spaces)"
    )
    assert rows[32].error == "column 'Score' → field 'lead_score': '150' must be <= 100"
    assert rows[57].suggestions == {
        "field": "lifecycle_stage",
        "value_map": {"Custmer": "customer"},
    }
    assert rows[72].owner_resolution == "unknown" and rows[72].status is RowStatus.INVALID
    assert rows[22].status is RowStatus.DUPLICATE and "row 122" in (rows[22].error or "")
    assert rows[122].status is RowStatus.VALID
    assert rows[303].status is RowStatus.INVALID
    assert rows[303].error == "line 303: malformed line: expected 13 cells, found 14"
    assert rows[303].source.values["_extra_cells"] == ["2024-05-01 09:00"]
    # blank cells are omitted, not sent as null
    blank_score = next(
        r
        for r in rows.values()
        if r.source.values.get("Score") == "" and r.status is RowStatus.VALID
    )
    assert blank_score.payload is not None and "lead_score" not in blank_score.payload["fields"]


def test_companies_and_deals_samples(meta: tuple[Schema, list[dict[str, Any]]]) -> None:
    comp = prepare("companies", meta)
    assert len(comp) == 200
    assert {r.source.source_row for r in comp.values() if r.status is not RowStatus.VALID} == {
        23,
        56,
    }
    assert Counter(r.owner_resolution for r in comp.values())["unowned"] == 1
    deals = prepare("deals", meta)
    assert len(deals) == 300 and min(deals) == 1
    assert deals[15].error == "column 'Stage' → field 'stage': is required, but the value is empty"
    assert deals[14].payload is not None and deals[14].payload["fields"]["stage"] == "won"
    d = deals[1].payload
    assert d is not None and d["fields"]["close_date"][:2] == "20"
    assert isinstance(d["fields"]["probability"], int)


def write_contacts(tmp_path: Path, csv_text: str, extra: str = "") -> Path:
    (tmp_path / "c.csv").write_text(csv_text)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "object_type: contacts\nsource:\n  path: c.csv\nname: Name\n"
        "match_by: [email, name]\nfields:\n  email: Email\n  job_title:\n    column: Title\n"
        "    empty: 'null'\n" + extra
    )
    return cfg


def run(cfg: Path, meta: tuple[Schema, list[dict[str, Any]]] | None) -> list[PreparedRow]:
    schema, users = meta if meta else (None, None)
    return list(prepare_step(load_mapping(cfg), base_dir=cfg.parent, schema=schema, users=users))


CSV = "Name,Email,Title\nAnn,ann@x.example,CTO\nBob,,\nAnn B,ANN@x.example ,\nBob,,Dev\n"


def test_duplicates_last_wins_and_fallback_to_name(
    tmp_path: Path, meta: tuple[Schema, list[dict[str, Any]]]
) -> None:
    rows = run(write_contacts(tmp_path, CSV), meta)
    assert [r.status.value for r in rows] == ["duplicate", "duplicate", "valid", "valid"]
    assert rows[0].error == (
        "duplicate key email:ann@x.example: row 4 has the same key and wins (duplicates: last)"
    )
    assert rows[1].key == "name:Bob" and rows[3].match_by == "name"
    assert rows[2].payload is not None and rows[2].payload["fields"]["job_title"] is None


def test_duplicates_fail_policy_and_missing_key_fail(
    tmp_path: Path, meta: tuple[Schema, list[dict[str, Any]]]
) -> None:
    cfg = write_contacts(tmp_path, CSV + ",,\n", "duplicates: fail\non_missing_key: fail\n")
    rows = run(cfg, meta)
    assert [r.status.value for r in rows] == ["duplicate"] * 4
    assert rows[0].error == "duplicate key email:ann@x.example: also on row 4 (duplicates: fail)"
    cfg = write_contacts(
        tmp_path, "Name,Email,Title\nAnn,,CTO\nBob,b@x.example,\n", "on_missing_key: fail\n"
    )
    cfg.write_text(cfg.read_text().replace("match_by: [email, name]", "match_by: email"))
    no_key, keyed = run(cfg, meta)
    assert no_key.status is RowStatus.INVALID
    assert no_key.error == "no usable match key: email empty (on_missing_key: fail)"
    assert keyed.status is RowStatus.VALID and keyed.match_value == "b@x.example"
    cfg.write_text(cfg.read_text().replace("on_missing_key: fail", "on_missing_key: create"))
    no_key, _ = run(cfg, meta)
    assert no_key.status is RowStatus.VALID and no_key.payload is not None
    assert "match_by" not in no_key.payload and no_key.key is None


def test_offline_checks_system_fields_and_declared_formats(tmp_path: Path) -> None:
    cfg = write_contacts(
        tmp_path,
        'Name,Email,Title,Score\nAnn,not-an-email,CTO,1.5\nBob,b@x.example,Dev,"1.234,5"\n',
        "  lead_score:\n    column: Score\n    decimal_separator: ','\n"
        "    thousands_separator: '.'\n",
    )
    bad, good = run(cfg, None)
    assert bad.status is RowStatus.INVALID  # email is a system field: known offline
    assert (
        bad.error == "column 'Email' → field 'email': 'not-an-email' is not a valid email address "
        "(one @, a dot in the domain, no spaces)"
    )
    assert good.payload is not None and good.payload["fields"]["lead_score"] == 1234.5


def test_nul_characters_fail_the_row_not_the_batch(
    tmp_path: Path, meta: tuple[Schema, list[dict[str, Any]]]
) -> None:
    [row] = run(write_contacts(tmp_path, "Name,Email,Title\nAnn,a@x.example,C\x00TO\n"), meta)
    assert row.status is RowStatus.INVALID
    assert row.error is not None and "column 'Title': contains a NUL character" in row.error


def test_config_errors_come_before_any_row(
    tmp_path: Path, meta: tuple[Schema, list[dict[str, Any]]]
) -> None:
    cfg = write_contacts(tmp_path, "Name,Mail,Title\nAnn,a@b.example,CTO\n")
    with pytest.raises(ConfigError, match="'Email'") as err:
        prepare_step(load_mapping(cfg), base_dir=tmp_path, schema=meta[0], users=meta[1])
    assert "c.yaml" in str(err.value)
    (tmp_path / "c.csv").unlink()
    with pytest.raises(ConfigError, match="source file not found"):
        prepare_step(load_mapping(cfg), base_dir=tmp_path, schema=None, users=None)


def test_pipeline_steps_prepare(meta: tuple[Schema, list[dict[str, Any]]]) -> None:
    p = load_pipeline(ROOT / "pipelines" / "nightly.yaml")
    total = 0
    for step in p.steps:
        total += sum(
            1
            for _ in prepare_step(
                step.config, base_dir=step.base_dir, schema=meta[0], users=meta[1]
            )
        )
    assert total == 200 + 501 + 300


def test_parquet_directory_duplicates_across_files_and_typed_columns(
    tmp_path: Path, meta: tuple[Schema, list[dict[str, Any]]]
) -> None:
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "deals").mkdir()
    pq.write_table(
        pa.table(
            {
                "n": ["A", "B"],
                "s": ["Won", "lost"],
                "amt": [10.5, 3.0],
                "d": [dt.date(2025, 1, 2), None],
                "tags": ["x", "y"],
            }
        ),
        tmp_path / "deals" / "part-0.parquet",
    )
    pq.write_table(
        pa.table(
            {"n": ["A"], "s": ["Lost"], "amt": [1.005], "d": [dt.date(2025, 3, 4)], "tags": ["z"]}
        ),
        tmp_path / "deals" / "part-1.parquet",
    )
    cfg = tmp_path / "d.yaml"
    cfg.write_text(
        "object_type: deal\nsource:\n  path: deals\n  format: parquet\nname: n\n"
        "match_by: name\nfields:\n  stage: s\n  amount: amt\n  close_date: d\n"
    )
    rows = run(cfg, meta)
    assert [
        (Path(r.source.source_file).name, r.source.source_row, r.status.value) for r in rows
    ] == [
        ("part-0.parquet", 1, "duplicate"),
        ("part-0.parquet", 2, "valid"),
        ("part-1.parquet", 3, "invalid"),  # row numbers run on across the files
    ]
    assert rows[0].error is not None and "row 3 of part-1.parquet has the same key" in rows[0].error
    assert rows[1].payload is not None
    assert rows[1].payload["fields"] == {"stage": "lost", "amount": 3.0}
    assert (
        rows[2].error == "column 'amt' → field 'amount': '1.005' must have at most 2 decimal places"
    )


def test_multi_select_element_errors_name_the_element(
    tmp_path: Path, meta: tuple[Schema, list[dict[str, Any]]]
) -> None:
    cfg = write_contacts(
        tmp_path,
        "Name,Email,Title,Tags\nAnn,a@x.example,,VIP; Partnr\nBob,b@x.example,,vip;newsletter\n",
        "  tags:\n    column: Tags\n    split: ';'\n",
    )
    bad, good = run(cfg, meta)
    assert bad.error == (
        "column 'Tags' → field 'tags': 'Partnr' is not an option "
        "(vip, partner, churn-risk, newsletter)"
    )
    assert bad.suggestions == {"field": "tags", "value_map": {"Partnr": "partner"}}
    assert good.payload is not None and good.payload["fields"]["tags"] == ["vip", "newsletter"]


def test_a_parquet_file_lacking_a_mapped_column_is_a_source_error(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from recordsync.core.errors import SourceError

    (tmp_path / "p").mkdir()
    pq.write_table(pa.table({"n": ["A"], "s": ["won"]}), tmp_path / "p" / "a.parquet")
    pq.write_table(pa.table({"n": ["B"]}), tmp_path / "p" / "b.parquet")
    cfg = tmp_path / "d.yaml"
    cfg.write_text(
        "object_type: deals\nsource:\n  path: p\n  format: parquet\nname: n\nfields:\n  stage: s\n"
    )
    rows = prepare_step(load_mapping(cfg), base_dir=tmp_path, schema=None, users=None)
    with pytest.raises(SourceError, match=r"b\.parquet lacks column\(s\) 's'"):
        list(rows)


def test_a_header_differing_only_in_spaces_or_case_is_named_first_not_matched(
    tmp_path: Path,
) -> None:
    from recordsync.prepare import check_source

    (tmp_path / "leads.csv").write_text("Email,Lead Score ,company\nA@x.example,5,X\n", "utf-8")
    (tmp_path / "m.yaml").write_text(
        "object_type: contacts\nsource: {path: leads.csv}\nname: Email\n"
        "fields: {email: Email, lead_score: Lead Score, job_title: Company, phone: Phone}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as err:
        check_source(load_mapping(tmp_path / "m.yaml"), tmp_path)
    first = str(err.value).splitlines()[0]
    assert first.startswith(f"{tmp_path / 'm.yaml'}:4 [columns]: column 'Lead Score' not found;")
    assert "the header has 'Lead Score ' (trailing space)" in first
    assert "column 'Company' not found; the header has 'company' (different case)" in first
    assert "column(s) not in the source's header: 'Lead Score', 'Company', 'Phone'" in first


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.integers(2, 400), min_size=1, max_size=80, unique=True),
    bad_share=st.integers(0, 3),
    size=st.integers(1, 9),
)
def test_a_batch_prepared_in_slices_keeps_every_row_and_malformed_line_in_line_order(
    lines: list[int], bad_share: int, size: int
) -> None:
    """The slices of a read batch hold its rows in order, and each malformed line goes with
    the slice it falls in: prepared slice by slice, lines come out as from one batch."""
    import numpy as np
    import pyarrow as pa

    from recordsync.prepare.core import _slices
    from recordsync.read import BadLine, SourceBatch

    lines.sort()
    bad_lines = [n for i, n in enumerate(lines) if bad_share and i % 4 < bad_share]
    good = [n for n in lines if n not in bad_lines] or [1]
    batch = pa.RecordBatch.from_pydict({"line": good})
    sb = SourceBatch(
        "f.csv", batch, np.array(good, dtype=np.int64), [BadLine(n, "x", "bad") for n in bad_lines]
    )
    order: list[int] = []
    for part in _slices(sb, size):
        assert part.batch.column(0).to_pylist() == part.rows.tolist()
        rows, bad = part.rows.tolist(), [b.line for b in part.bad]
        b = 0
        for line in rows:  # the interleaving of prepare._build_rows
            while b < len(bad) and bad[b] < line:
                order.append(bad[b])
                b += 1
            order.append(line)
        order.extend(bad[b:])
    assert order == sorted([*good, *bad_lines])


@pytest.mark.parametrize("name", ["contacts", "companies"])
@pytest.mark.parametrize("map_rows", [1, 20, 64, 100_000])
def test_slices_prepare_exactly_what_whole_batches_do(
    name: str, map_rows: int, meta: tuple[Schema, list[dict[str, Any]]], monkeypatch: Any
) -> None:
    """A sending run prepares read batches in slices (``slice_rows``), mapped column by
    column a window of ``sizes.MAP_ROWS`` rows at a time (less than a slice, not a multiple
    of one, the whole batch); the sample exports, with their malformed line, duplicates and
    invalid rows, come out the same either way."""
    mapping = load_mapping(CONFIGS / f"{name}.yaml")
    monkeypatch.setattr(sizes, "MAP_ROWS", map_rows)

    def run(slice_rows: int | None) -> list[tuple[Any, ...]]:
        rows = prepare_step(
            mapping, base_dir=CONFIGS, schema=meta[0], users=meta[1], slice_rows=slice_rows
        )
        return [
            (
                r.source.source_row,
                r.status,
                r.payload,
                r.match_by,
                r.match_value,
                r.key,
                r.error,
                r.owner_resolution,
                r.suggestions,
            )
            for r in rows
        ]

    whole = run(None)
    assert len(whole) >= 200
    assert run(7) == whole
    assert run(64) == whole


@pytest.mark.parametrize("name", ["contacts", "companies"])
@pytest.mark.parametrize("first", [1, 37, 99])
def test_a_sending_run_prepares_the_first_rows_on_their_own(
    name: str, first: int, meta: tuple[Schema, list[dict[str, Any]]], monkeypatch: Any
) -> None:
    """A sending run (``slice_rows``) prepares the first ``sizes.FIRST_SLICE_ROWS`` rows of
    the step's first read batch as a list of their own, before the rest of the batch is
    mapped: its first chunk waits for those only. The rows (with the malformed line and the
    duplicates of the sample exports) come out as from whole batches."""
    from recordsync.read import iter_source

    mapping = load_mapping(CONFIGS / f"{name}.yaml")
    monkeypatch.setattr(sizes, "FIRST_SLICE_ROWS", first)
    batch = next(iter(iter_source(mapping.source, CONFIGS)))
    assert len(batch.rows) > 2 * first
    bound = int(batch.rows[first])  # the first row of the rest
    wanted = [*batch.rows[:first].tolist(), *(b.line for b in batch.bad if b.line < bound)]

    def rows_of(got: list[PreparedRow]) -> list[tuple[Any, ...]]:
        return [(r.source.source_row, r.status, r.payload, r.key, r.error) for r in got]

    kw: dict[str, Any] = {"base_dir": CONFIGS, "schema": meta[0], "users": meta[1]}
    lists = list(prepare_step(mapping, slice_rows=sizes.SLICE_ROWS, **kw).lists)
    assert sorted(r.source.source_row for r in lists[0]) == sorted(wanted)
    whole = rows_of(list(prepare_step(mapping, slice_rows=None, **kw)))
    assert rows_of([r for got in lists for r in got]) == whole


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(0, 20_000), first=st.integers(1, 700))
def test_the_first_batch_is_cut_into_parts_twice_as_large_each_up_to_a_slice(
    rows: int, first: int
) -> None:
    """``ramp``: the first part ``FIRST_SLICE_ROWS`` rows, each next one twice as large, every
    part smaller than a slice, and more rows left after each part than it holds."""
    from recordsync.prepare.core import ramp

    with pytest.MonkeyPatch.context() as m:
        m.setattr(sizes, "FIRST_SLICE_ROWS", first)
        parts = ramp(rows)
    assert parts == [first * 2**i for i in range(len(parts))]
    assert all(p < sizes.SLICE_ROWS for p in parts)
    assert all(rows - sum(parts[: i + 1]) > p for i, p in enumerate(parts))
    if rows > 2 * first and first < sizes.SLICE_ROWS:
        assert parts, "a batch of more than twice the first part is cut"


def test_a_file_rewritten_after_the_scans_stops_the_step_before_its_first_row(
    tmp_path: Path,
) -> None:
    # The duplicate scan found rows 1 and 3 to share an e-mail, 2 and 4 a name (3 and 4
    # win). Rewritten with another row in front, those places hold other rows: the step must
    # not take the scan's findings for them, and stops before it makes any row.
    cfg = write_contacts(tmp_path, CSV)
    blocks = prepare_step(load_mapping(cfg), base_dir=tmp_path, schema=None, users=None)
    (tmp_path / "c.csv").write_text("Name,Email,Title\nCy,cy@x.example,\n" + CSV.split("\n", 1)[1])
    with pytest.raises(SourceError) as caught:
        next(iter(blocks))
    message = str(caught.value)
    assert "c.csv changed between the first pass and the read of its rows" in message
    assert "c.csv: its size went from 76 to 93 bytes" in message and "[source.path]" in message
    assert caught.value.hint is not None and "export is complete" in caught.value.hint


def test_a_file_rewritten_while_its_rows_are_read_stops_the_step_after_them(
    tmp_path: Path,
) -> None:
    cfg = write_contacts(tmp_path, CSV)
    blocks = prepare_step(load_mapping(cfg), base_dir=tmp_path, schema=None, users=None).lists
    first = next(blocks)
    assert [r.status.value for r in first] == ["duplicate", "duplicate", "valid", "valid"]
    (tmp_path / "c.csv").write_text(CSV + "Dee,dee@x.example,\n")
    changed = r"c\.csv changed while its rows were read: .*c\.csv: its size went from 76"
    with pytest.raises(SourceError, match=changed):
        list(blocks)


def test_a_source_read_in_one_pass_is_not_stamped(tmp_path: Path) -> None:
    # No match key, no ledger key, not contacts or companies: no scan, one pass, nothing to
    # hold the rows against (the file read is the file prepared).
    (tmp_path / "d.csv").write_text("Title,Stage\nA,won\n")
    cfg = tmp_path / "d.yaml"
    cfg.write_text(
        "object_type: deals\nsource:\n  path: d.csv\nname: Title\nfields:\n  stage: Stage\n"
    )
    blocks = prepare_step(load_mapping(cfg), base_dir=tmp_path, schema=None, users=None)
    (tmp_path / "d.csv").write_text("Title,Stage\nA,won\nB,lost\n")
    assert [r.source.values["Title"] for r in blocks] == ["A", "B"]
