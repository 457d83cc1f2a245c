"""Lost answers, then ``retry`` and a plain rerun, for each shape of mapping: every source row
ends with exactly one record of its own holding its values, or an honest non-ok outcome."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.run.retry import retry_report
from recordsync.run.runner import RunResult
from recordsync.send.retry import RetryPolicy

from .support import REPO, all_records, served, target

ROWS = 12
OK = {"created", "updated", "unchanged"}
SHAPES: dict[str, tuple[str, str, str]] = {
    # shape: (object_type, mapping lines, the field holding the row's own value)
    "email contacts": ("contacts", "match_by: [email]\nfields:\n  email: Key\n", "email"),
    "domain companies": ("companies", "fields:\n  domain: Key\n", "domain"),
    "name-keyed": (
        "deals",
        "match_by: [name]\nfields:\n  stage: Stage\n  amount: Amount\n",
        "amount",
    ),
    "ledger-only": (
        "deals",
        "ledger_key: {column: Key}\nmatch_by_ledger_id: true\n"
        "fields:\n  stage: Stage\n  amount: Amount\n",
        "amount",
    ),
    "no key": ("deals", "fields:\n  stage: Stage\n  amount: Amount\n", "amount"),
}
FAULTS = [
    "drop:every=2:path=/batch",
    "drop-after-apply:every=2:path=/batch",
    "status-after-apply:502:every=2:path=/batch",
    "html-after-apply:504:every=2:path=/batch",
]


def source_rows(shape: str) -> list[dict[str, str]]:
    object_type, _, _ = SHAPES[shape]
    shared = shape in ("ledger-only", "no key", "email contacts")  # every 5th name repeats
    rows = []
    for i in range(ROWS):
        name = f"Name {i - 1}" if shared and i % 5 == 1 else f"Name {i}"
        key = {"contacts": f"p{i}@x.example", "companies": f"c{i}.example"}.get(
            object_type, f"K{i}"
        )
        rows.append({"Name": name, "Key": key, "Stage": "won", "Amount": str(100 + i)})
    return rows


def write_project(tmp_path: Path, shape: str) -> Path:
    object_type, lines, _ = SHAPES[shape]
    rows = source_rows(shape)
    with open(tmp_path / "rows.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (tmp_path / "m.yaml").write_text(
        f"object_type: {object_type}\nsource:\n  path: rows.csv\nname:\n  column: Name\n{lines}"
    )
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        "name: shape\nsteps:\n  - m.yaml\nsend:\n  chunk_size: 4\n  canary_chunk_size: 4\n"
    )
    return pipeline


def request(tmp_path: Path, pipeline: Path, tag: str) -> RunRequest:
    return RunRequest(
        pipeline,
        report_dir=tmp_path / f"reports-{tag}",
        state_db=tmp_path / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=3),
        list_unchanged=True,  # every row's line, the unchanged ones too
    )


def value_of(record: dict[str, Any], field: str) -> str:
    value = record.get(field)
    return str(int(value)) if isinstance(value, int | float) else str(value)


def check(result: RunResult, shape: str, held: list[dict[str, Any]]) -> int:
    """Each row: ok with a record of its own holding its values, or not ok; no row's values
    in two records; the exit code says whether every row is ok. Returns the rows not ok."""
    _, _, field = SHAPES[shape]
    assert result.summary["accounting_ok"], result.summary.get("accounting_errors")
    by_id = {r["id"]: r for r in held}
    rows = source_rows(shape)
    own = {"email": "Key", "domain": "Key", "amount": "Amount"}[field]
    with open(result.report_dir / "results.csv", newline="") as f:
        lines = list(csv.DictReader(f))
    assert len(lines) == ROWS
    seen: set[str] = set()
    not_ok = 0
    for line in lines:
        row = rows[int(line["source_row"]) - 2]
        holding = [r for r in held if value_of(r, field) == row[own]]
        assert len(holding) <= 1, f"row {line['source_row']} is in {len(holding)} records"
        if line["status"] not in OK:
            not_ok += 1
            assert line["error"], line
            continue
        record = by_id[int(line["record_id"])]
        assert record["name"] == row["Name"] and value_of(record, field) == row[own], line
        assert line["record_id"] not in seen, f"record {line['record_id']} reported twice"
        seen.add(line["record_id"])
    assert (result.exit_code == 0) == (not_ok == 0), (result.exit_code, not_ok)
    if not_ok == 0:
        assert len(held) == ROWS
    return not_ok


@pytest.mark.parametrize(
    "fault", FAULTS, ids=[f.split(":")[0] + ":" + f.split(":")[1] for f in FAULTS]
)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_lost_answer_then_retry_then_rerun(tmp_path: Path, shape: str, fault: str) -> None:
    object_type = SHAPES[shape][0]
    pipeline = write_project(tmp_path, shape)
    db = tmp_path / "s.db"
    with served(db, [fault]) as url:
        first = run_pipeline(request(tmp_path, pipeline, "1"), target=target(url))
        held = all_records(url, object_type)
    assert first.error is None, first.error
    check(first, shape, held)
    if shape in ("ledger-only", "no key"):  # creates with no key: read back, not resent blind
        assert first.summary["steps"][0]["settled_by_reading"] > 0
    with served(db) as url:
        retried = None
        if first.exit_code != 0:
            retried = retry_report(
                first.report_dir, request(tmp_path, pipeline, "2"), target=target(url)
            )
            assert retried.error is None
            check_retry(retried, shape, all_records(url, object_type))
        if shape == "no key":  # a plain rerun creates every row again: not this test's matter
            return
        again = run_pipeline(request(tmp_path, pipeline, "3"), target=target(url))
        held = all_records(url, object_type)
    assert check(again, shape, held) == 0  # nothing is left in doubt in these shapes
    assert Counter(r["name"] for r in held) == Counter(r["Name"] for r in source_rows(shape))


def check_retry(result: RunResult, shape: str, held: list[dict[str, Any]]) -> None:
    """A retry's report holds only the rows it resent: each ok one is its own record."""
    _, _, field = SHAPES[shape]
    assert result.summary["accounting_ok"]
    rows = source_rows(shape)
    own = {"email": "Key", "domain": "Key", "amount": "Amount"}[field]
    by_id = {r["id"]: r for r in held}
    for row in rows:
        assert sum(value_of(r, field) == row[own] for r in held) <= 1
    with open(result.report_dir / "results.csv", newline="") as f:
        lines = list(csv.DictReader(f))
    for line in lines:
        row = rows[int(line["source_row"]) - 2]
        if line["status"] in OK:
            assert value_of(by_id[int(line["record_id"])], field) == row[own]
        else:
            assert line["error"]
    not_ok = sum(line["status"] not in OK for line in lines)
    assert (result.exit_code == 0) == (not_ok == 0)


def test_the_sample_nightly_survives_a_lost_answer_on_companies(tmp_path: Path) -> None:
    """The sample pipeline, one companies batch applied but answered with a 502: every step
    runs, nothing is held in doubt, the records are those of a clean run."""
    nightly = REPO / "pipelines" / "nightly.yaml"

    def go(where: Path, faults: list[str]) -> tuple[RunResult, dict[str, Counter[str]]]:
        with served(where / "s.db", faults) as url:
            result = run_pipeline(request(where, nightly, "n"), target=target(url))
            held = {
                t: Counter(r["name"] for r in all_records(url, t))
                for t in ("companies", "contacts", "deals")
            }
        return result, held

    (tmp_path / "clean").mkdir()
    clean, expected = go(tmp_path / "clean", [])
    for fault in ("status-after-apply:502", "drop-after-apply", "html-after-apply:504"):
        where = tmp_path / fault.replace(":", "-")
        where.mkdir()
        lost, held = go(where, [f"{fault}:every=2:path=/objects/companies/batch"])
        assert lost.error is None, lost.error
        assert lost.exit_code == clean.exit_code == 1  # the sample's bad rows, nothing more
        assert [s["step"] for s in lost.summary["steps"]] == [
            s["step"] for s in clean.summary["steps"]
        ]
        assert lost.summary["totals"]["in_doubt"] == 0
        assert lost.summary["totals"]["failed"] == clean.summary["totals"]["failed"]
        assert held == expected


# a mapping with no key has no ledger entry to remember the doubt by: retry only
LATER = [("ledger-only", "retry"), ("ledger-only", "rerun"), ("no key", "retry")]


@pytest.mark.parametrize("fault", ["drop", "drop-after-apply"])
@pytest.mark.parametrize(("shape", "then"), LATER)
def test_rows_held_in_doubt_are_read_back_later(
    tmp_path: Path, shape: str, fault: str, then: str
) -> None:
    """Lost answers on a target that could not be read back then: every unsafe row is held
    in doubt; the retry (or, keyed by the ledger, the next run) reads each back and either
    takes its record or sends it: every row ends with its own record, nothing twice."""
    object_type = SHAPES[shape][0]
    pipeline = write_project(tmp_path, shape)
    db = tmp_path / "s.db"
    # a ledger-only step with an empty ledger first asks whether the target holds records
    skip = ":after=1" if shape == "ledger-only" else ""
    unreadable = f"status:405:method=GET:path=/objects/{object_type}{skip}"
    with served(db, [f"{fault}:every=2:path=/batch", unreadable]) as url:
        first = run_pipeline(request(tmp_path, pipeline, "1"), target=target(url))
    assert first.summary["totals"]["in_doubt"] > 0
    assert first.exit_code == 1
    with served(db) as url:
        if then == "retry":
            later = retry_report(
                first.report_dir, request(tmp_path, pipeline, "2"), target=target(url)
            )
            check_retry(later, shape, all_records(url, object_type))
        else:
            later = run_pipeline(request(tmp_path, pipeline, "2"), target=target(url))
            check(later, shape, all_records(url, object_type))
        held = all_records(url, object_type)
    assert later.exit_code == 0 and later.summary["totals"]["in_doubt"] == 0
    assert later.summary["steps"][0]["settled_by_reading"] > 0
    assert len(held) == ROWS
    assert Counter(r["name"] for r in held) == Counter(r["Name"] for r in source_rows(shape))
