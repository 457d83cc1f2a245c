"""Merges and duplicates are outcomes, never silent (issue 12, items 1 and 2), over loopback
against the sandbox: rows the service would fold into another row's record are held as
``merged``; rows that land on a record another key holds are ``merged``, not ``updated``;
duplicate rows are in failures.csv with the row that won; each fails the run unless the
mapping declares it expected; and nightly reruns never flip a record between two rows."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.config import load_pipeline
from recordsync.prepare.merge_rules import name_key
from recordsync.run.checks import check_step
from recordsync.run.pipeline import run_pipeline
from recordsync.state import StateStore

from .support import KEY, all_records, only_key, served, target
from .test_ledger_e2e import request, results, totals, write, write_csv

HEADER = ["Company", "Website", "Phone"]
DAVENPORT = [
    ["Davenport LLC", "d1.example", "+1 555 0100"],
    ["Davenport PLC", "d2.example", "+1 555 0200"],
]


def companies(tmp: Path, rows: list[list[str]], extra: str = "") -> Path:
    write_csv(tmp / "companies.csv", HEADER, rows)
    write(
        tmp / "companies.yaml",
        "object_type: companies\nsource: {path: companies.csv}\nname: Company\n"
        "match_by: [name]\nfields: {domain: Website, phone: Phone}\n" + extra,
    )
    return write(tmp / "sync.yaml", "name: sync\nsteps: [companies.yaml]\n")


def failures(result: Any) -> list[dict[str, str]]:
    with open(result.report_dir / "failures.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def status_of(result: Any) -> dict[int, str]:
    return {int(r["source_row"]): r["status"] for r in results(result)}


def test_a_name_differing_only_by_its_legal_suffix_is_held_as_merged(tmp_path: Path) -> None:
    pipeline = companies(tmp_path, DAVENPORT)
    with served(tmp_path / "s.db") as url:
        dry = run_pipeline(request(tmp_path, pipeline, dry_run=True), target=target(url))
        run = run_pipeline(request(tmp_path, pipeline), target=target(url))
        held = all_records(url, "companies")
    for result in (dry, run):
        assert status_of(result)[3] == "merged"
        assert result.exit_code == 1
        assert totals(result, "companies")["rows_merged"] == 1
    assert (totals(run)["created"], totals(run)["rows_sent"]) == (1, 1)
    (row,) = failures(run)
    assert (row["_status"], row["_source_row"], row["Company"]) == ("merged", "3", "Davenport PLC")
    assert "merges with row 2" in row["_error"] and "'davenport'" in row["_error"]
    assert "merges: expected" in row["_error"]
    davenport = [r for r in held if r["name"].startswith("Davenport")]
    assert [(r["name"], r["domain"]) for r in davenport] == [("Davenport LLC", "d1.example")]
    md = (run.report_dir / "report.md").read_text(encoding="utf-8")
    assert "## Merges and duplicates" in md and "1 row(s) not sent" in md


def test_nightly_reruns_never_flip_the_record_between_the_two_rows(tmp_path: Path) -> None:
    pipeline = companies(tmp_path, DAVENPORT)
    seen: list[tuple[int, str, str]] = []
    with served(tmp_path / "s.db") as url:
        runs = [run_pipeline(request(tmp_path, pipeline), target=target(url))]
        edited = [DAVENPORT[0], ["Davenport PLC", "d2.example", "+1 555 0299"]]
        companies(tmp_path, edited)
        for _ in range(2):
            runs.append(run_pipeline(request(tmp_path, pipeline), target=target(url)))
            rec = next(r for r in all_records(url, "companies") if r["name"].startswith("Dav"))
            seen.append((rec["id"], rec["name"], rec["phone"]))
    assert [r.exit_code for r in runs] == [1, 1, 1]
    assert [status_of(r)[3] for r in runs] == ["merged"] * 3
    assert [status_of(r)[2] for r in runs] == ["created", "unchanged", "unchanged"]
    assert seen[0] == seen[1] and seen[0][1:] == ("Davenport LLC", "+1 555 0100")


def test_merges_declared_expected_are_sent_and_do_not_fail_the_run(tmp_path: Path) -> None:
    pipeline = companies(tmp_path, DAVENPORT, "merges: expected\n")
    with served(tmp_path / "s.db") as url:
        run = run_pipeline(request(tmp_path, pipeline), target=target(url))
        again = run_pipeline(request(tmp_path, pipeline), target=target(url))
    assert run.exit_code == 0 and again.exit_code == 0
    assert status_of(run) == {2: "created", 3: "updated"}
    assert failures(run) == []
    md = (run.report_dir / "report.md").read_text(encoding="utf-8")
    assert "landed on record" in md and "like row 2" in md


def test_the_same_domain_written_two_ways_is_a_merge(tmp_path: Path) -> None:
    rows = [["Acme", "https://www.acme.example/", ""], ["Acme Holdings", "ACME.example", ""]]
    pipeline = companies(tmp_path, rows)
    with served(tmp_path / "s.db") as url:
        run = run_pipeline(request(tmp_path, pipeline), target=target(url))
    assert status_of(run) == {2: "created", 3: "merged"}
    (row,) = failures(run)
    assert "same domain as row 2 once normalised: 'acme.example'" in row["_error"]
    assert run.exit_code == 1


def test_a_row_landing_on_a_record_another_ledger_key_holds_is_merged(tmp_path: Path) -> None:
    """The row that holds the record left the source: nothing predicts the merge; the
    answer shows it, and the ledger never gives the record to the second key."""
    pipeline = companies(tmp_path, DAVENPORT[:1])
    with served(tmp_path / "s.db") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        companies(tmp_path, DAVENPORT[1:])
        later = [run_pipeline(request(tmp_path, pipeline), target=target(url)) for _ in range(2)]
    assert first.exit_code == 0
    for run in later:
        (line,) = results(run)
        assert line["status"] == "merged" and "ledger key 'name:Davenport LLC'" in line["error"]
        assert run.exit_code == 1 and totals(run)["merged"] == 1
        assert run.summary["accounting_ok"]
    with StateStore(tmp_path / "state.db") as store:
        entry = store.get(only_key(store, "sync"), "companies", "name:Davenport PLC")
    assert entry is not None and entry.record_id is None and entry.last_status == "failed"


LEDGER_KEYED = "ledger_key: {column: Website, normalize: domain}\n"
TWO_WAYS = [["Acme", "https://acme.example", ""], ["Acme Two", "www.acme.example/", ""]]


@pytest.mark.parametrize(("keep", "winner", "loser"), [("first", 2, 3), ("last", 3, 2)])
def test_duplicates_by_ledger_key_follow_first_and_last(
    tmp_path: Path, keep: str, winner: int, loser: int
) -> None:
    pipeline = companies(tmp_path, TWO_WAYS, LEDGER_KEYED + f"duplicates: {keep}\n")
    with served(tmp_path / "s.db") as url:
        run = run_pipeline(request(tmp_path, pipeline), target=target(url))
        names = [r["name"] for r in all_records(url, "companies") if r["name"].startswith("Acme")]
    assert status_of(run) == {winner: "created", loser: "duplicate"}
    assert names == [TWO_WAYS[winner - 2][0]]
    (row,) = failures(run)
    assert row["_status"] == "duplicate" and row["_source_row"] == str(loser)
    assert row["_error"] == (
        "duplicate ledger key 'acme.example' (column 'Website'): "
        f"row {winner} has the same key and wins (duplicates: {keep})"
    )
    assert run.exit_code == 1


def test_duplicates_declared_expected_do_not_fail_the_run(tmp_path: Path) -> None:
    extra = LEDGER_KEYED + "duplicates: {keep: last, expected: true}\n"
    pipeline = companies(tmp_path, TWO_WAYS, extra)
    with served(tmp_path / "s.db") as url:
        run = run_pipeline(request(tmp_path, pipeline), target=target(url))
    assert status_of(run) == {2: "duplicate", 3: "created"}
    assert [r["_status"] for r in failures(run)] == ["duplicate"]
    assert run.summary["steps"][0]["duplicates_expected"] is True
    assert run.exit_code == 0


def test_validate_scan_finds_the_groups_the_run_finds(tmp_path: Path) -> None:
    rows = [
        ["Acme", "https://acme.example", ""],
        ["Globex", "globex.example", ""],
        ["Acme Two", "www.acme.example/", ""],
        ["Globex", "", ""],  # no website: keyed by its name, which row 3's match key shares
        ["Initech Inc", "initech.example", ""],
        ["Initech", "initech.io", ""],  # folds into row 6's record by name
        ["Umbrella", "HTTP://ACME.EXAMPLE/x", ""],  # the third Acme website: it wins (last)
    ]
    pipeline = companies(tmp_path, rows, LEDGER_KEYED)
    (step_config,) = load_pipeline(pipeline).steps
    scan = check_step(step_config, schema=None, users=None, scan=True, show=10)
    with served(tmp_path / "s.db") as url:
        dry = run_pipeline(request(tmp_path, pipeline, dry_run=True), target=target(url))
    step = totals(dry, "companies")
    assert dict(scan.counts) == {"valid": 3, "duplicate": 3, "merged": 1}
    assert (step["rows_duplicate"], step["rows_merged"], step["rows_sent"]) == (3, 1, 3)
    assert status_of(dry) == {
        2: "duplicate",
        3: "duplicate",
        4: "duplicate",
        5: "valid",
        6: "valid",
        7: "merged",
        8: "valid",
    }
    problems = [f"row {r['source_row']}: {r['error']}" for r in results(dry) if r["error"]]
    assert scan.first_problems == problems


def test_a_row_whose_key_has_its_own_record_is_not_held(tmp_path: Path) -> None:
    """Renamed to a name like another company's: matched by its ledger id, it updates its
    own record (no dedup on an update), so it is sent, not held as merged."""
    extra = LEDGER_KEYED + "match_by_ledger_id: true\n"
    rows = [DAVENPORT[0], ["Davenport Partners", "d2.example", "+1 555 0200"]]
    pipeline = companies(tmp_path, rows, extra)
    with served(tmp_path / "s.db") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        companies(tmp_path, DAVENPORT, extra)
        renamed = run_pipeline(request(tmp_path, pipeline), target=target(url))
        again = run_pipeline(request(tmp_path, pipeline), target=target(url))
        held = sorted((r["name"], r["domain"]) for r in all_records(url, "companies"))
    assert status_of(first) == {2: "created", 3: "created"}
    assert status_of(renamed) == {2: "unchanged", 3: "updated"}
    assert status_of(again) == {2: "unchanged", 3: "unchanged"}
    assert [r.exit_code for r in (first, renamed, again)] == [0, 0, 0]
    assert held == [("Davenport LLC", "d1.example"), ("Davenport PLC", "d2.example")]


_core = st.lists(
    st.sampled_from(["Acme", "acme", "ACME", "Nord", "nord", "Co"]), min_size=1, max_size=2
)
_tail = st.sampled_from(
    ["", " LLC", " PLC", " Inc.", ", Ltd", " GmbH", " co", " S.A.", "!", " Corp"]
)


def test_the_name_rule_predicts_what_the_sandbox_does_over_http(tmp_path: Path) -> None:
    """Black box: two companies created one after the other (no domain, no LinkedIn URL)
    end on one record exactly when :func:`recordsync.prepare.merge_rules.name_key` says they do."""
    seen = itertools.count()
    with served(tmp_path / "s.db") as url, httpx.Client(headers={"x-api-key": KEY}) as http:

        @settings(max_examples=40, deadline=None, database=None)
        @given(_core, _tail, _core, _tail)
        def check(a: list[str], ta: str, b: list[str], tb: str) -> None:
            tag = f"t{next(seen)}"  # a fresh name space per example
            names = [f"{tag} {' '.join(a)}{ta}", f"{tag} {' '.join(b)}{tb}"]
            objects = [{"name": n} for n in names]
            answer = http.post(f"{url}/api/objects/companies/batch", json={"objects": objects})
            first, second = answer.json()["results"]
            same = second["id"] == first["id"]
            assert same == (name_key(names[0]) == name_key(names[1])), names

        check()


def test_a_row_with_a_record_in_the_ledger_claims_its_keys_before_new_rows(
    tmp_path: Path,
) -> None:
    """Davenport LLC has its record; next night it changed (so the snapshot does not vouch
    for it) and a new Davenport PLC comes before it in the export: the new row is held, never
    sent to overwrite the existing record."""
    pipeline = companies(tmp_path, DAVENPORT[:1])
    with served(tmp_path / "s.db") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        changed = ["Davenport LLC", "d1.example", "+1 555 0111"]
        companies(tmp_path, [DAVENPORT[1], changed])
        second = run_pipeline(request(tmp_path, pipeline), target=target(url))
        held = [r for r in all_records(url, "companies") if r["name"].startswith("Dav")]
    assert first.exit_code == 0 and second.exit_code == 1
    assert status_of(second) == {2: "merged", 3: "updated"}
    step = totals(second, "companies")
    assert (step["rows_merged"], step["merged"], step["rows_sent"]) == (1, 0, 1)
    assert "merges with row 3" in results(second)[0]["error"]
    assert [(r["name"], r["phone"]) for r in held] == [("Davenport LLC", "+1 555 0111")]
