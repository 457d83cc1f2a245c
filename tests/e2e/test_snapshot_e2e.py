"""The nightly fast path (source-row digests and snapshots) decides exactly as the full path.

The sample nightly pipeline runs once; then its contacts export is edited in the ways a real
export changes (a changed cell, a new row, a removed row, a changed row taking the e-mail of
an unchanged one before and after it, a row turned invalid, an unchanged row exported twice,
a malformed line). The same
second run is made twice from copies of the same sandbox and state: once with the snapshot
the first run left (fast path), once with the snapshot dropped (every row mapped). Their
results.csv and totals must be identical, and the fast one must have mapped only the rows
that changed (and the ones that share a key with them).
"""

from __future__ import annotations

import csv
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import recordsync.prepare.digests as prepare_digests
from recordsync.prepare.seen_log import SeenLog
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy
from recordsync.state import StateStore, snapshot_match
from recordsync.state.digest_runs import SortedDigests
from recordsync.state.snapshots import Snapshot, file_reader
from recordsync.tuning import sizes

from .support import REPO, only_key, served
from .support import target as _served_target


def target(url: str) -> Any:
    """Copies of one sandbox and its state, served from other files: one target to the
    state store."""
    return _served_target(url, state_name="embedded-sandbox:the-first-run")


def _copy_project(root: Path) -> Path:
    for d in ("pipelines", "configs", "sample_data"):
        shutil.copytree(REPO / d, root / d)
    return root / "pipelines" / "nightly.yaml"


def _request(pipeline: Path, work: Path, **kw: Any) -> RunRequest:
    return RunRequest(
        pipeline,
        report_dir=work / "reports",
        state_db=work / "state" / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
        **{"list_unchanged": True, **kw},  # every row's line, the unchanged ones too
    )


def _backup(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    a.close()
    b.close()


def _clone(work: Path, to: Path) -> None:
    _backup(work / "sandbox.db", to / "sandbox.db")
    _backup(work / "state" / "state.db", to / "state" / "state.db")
    if (work / "state" / "snapshots").is_dir():
        shutil.copytree(work / "state" / "snapshots", to / "state" / "snapshots")


def _edit_contacts(path: Path) -> None:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, data = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    data[1][col["Title"]] = "Chief Financial Officer"  # line 3: a changed cell
    data[8][col["Email"]] = data[18][col["Email"]]  # line 10 takes line 20's e-mail
    data[28][col["Email"]] = data[23][col["Email"]]  # line 30 takes line 25's e-mail
    data[38][col["Score"]] = "not a number"  # line 40: now invalid
    del data[4]  # line 6 leaves the export
    new = list(data[0])
    new[col["Email"]] = "brand.new@example.org"
    new[col["First Name"]] = "Brand"
    data.append(new)
    data.append(list(data[60]))  # an unchanged row exported twice: the copy is a duplicate
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(data[:200])
        f.write("too,few,cells\n")  # a malformed line: its batch is prepared in full
        w.writerows(data[200:])


def _results(report_dir: Path) -> list[dict[str, str]]:
    with open(report_dir / "results.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _first_run(tmp_path: Path) -> tuple[Path, Path, Any]:
    """The sample project copied, and its nightly pipeline run once into a fresh sandbox."""
    pipeline = _copy_project(tmp_path / "project")
    work = tmp_path / "work"
    with served(work / "sandbox.db") as url:
        return pipeline, work, run_pipeline(_request(pipeline, work), target=target(url))


def _not_ok(run: Any, step: int) -> int:
    """Rows of a step that did not end created or updated (prepared again next run)."""
    s = run.summary["steps"][step]
    return int(s["rows_read"] - s["created"] - s["updated"])


def _run_counting(
    monkeypatch: pytest.MonkeyPatch, pipeline: Path, work: Path
) -> tuple[Any, dict[str, int]]:
    mapped: dict[str, int] = {}
    real = prepare_digests._blocks_of

    def counting(sb: Any, *args: Any) -> Any:
        blocks = list(real(sb, *args))
        name = Path(sb.file).name
        mapped[name] = mapped.get(name, 0) + sum(map(len, blocks))
        return iter(blocks)

    monkeypatch.setattr(prepare_digests, "_blocks_of", counting)
    with served(work / "sandbox.db") as url:
        result = run_pipeline(_request(pipeline, work), target=target(url))
    monkeypatch.setattr(prepare_digests, "_blocks_of", real)
    return result, mapped


def test_the_fast_path_reports_exactly_what_the_full_path_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # snapshot files of many record batches: their key hashes are read a batch at a time
    monkeypatch.setattr(sizes, "SNAPSHOT_FLUSH_ROWS", 64)
    pipeline, first, run1 = _first_run(tmp_path)
    assert run1.summary["accounting_ok"]
    store = StateStore(first / "state" / "state.db")
    try:
        registered = dict(
            store._conn.execute(
                "SELECT s.mapping, n.row_count FROM snapshots n JOIN scopes s USING (scope_id)"
            ).fetchall()
        )
    finally:
        store.close()
    # deals fill company_id from the companies ledger (a ref): no snapshot for them
    assert set(registered) == {"companies", "contacts"}
    contacts1 = run1.summary["steps"][1]
    assert registered["contacts"] == contacts1["created"] + contacts1["updated"]

    _edit_contacts(tmp_path / "project" / "sample_data" / "contacts.csv")
    fast_dir, full_dir = tmp_path / "fast", tmp_path / "full"
    _clone(first, fast_dir)
    _clone(first, full_dir)
    shutil.rmtree(full_dir / "state" / "snapshots")  # the full path: no snapshot to use


    def whole(self: Snapshot) -> Any:
        raise AssertionError("every snapshot row's key hash held at once")

    with monkeypatch.context() as m:  # the clashes are found a snapshot batch at a time
        m.setattr(Snapshot, "match_key_hashes", whole)
        m.setattr(Snapshot, "key_hashes", whole)
        fast, fast_mapped = _run_counting(monkeypatch, pipeline, fast_dir)
    full, full_mapped = _run_counting(monkeypatch, pipeline, full_dir)

    assert _results(fast.report_dir) == _results(full.report_dir)
    assert fast.summary["totals"] == full.summary["totals"]
    assert fast.summary["accounting_ok"] and full.summary["accounting_ok"]
    statuses = {r["status"] for r in _results(fast.report_dir) if r["step"] == "contacts"}
    assert {"unchanged", "updated", "created", "duplicate", "invalid"} <= statuses
    # the full path mapped every contacts row; the fast one only the rows that did not end
    # created/updated last time (10), the 5 edited or new rows, the 2 whose e-mail an edited
    # row took, and the unchanged row exported twice with its copy (demoted: 2 + 2)
    assert full_mapped["contacts.csv"] == full.summary["steps"][1]["rows_read"]
    assert fast_mapped["contacts.csv"] == _not_ok(run1, 1) + 5 + 2 + 2
    # the companies export did not change: only its rows that did not end created/updated
    assert fast_mapped.get("companies.csv", 0) == _not_ok(run1, 0)
    assert full_mapped["companies.csv"] == run1.summary["steps"][0]["rows_read"]


def test_a_second_unchanged_run_maps_nothing_and_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline, work, run1 = _first_run(tmp_path)
    run2, mapped = _run_counting(monkeypatch, pipeline, work)
    assert run2.summary["totals"]["rows_sent"] == run2.summary["totals"]["not_sent"] == 0
    assert mapped.get("companies.csv", 0) == _not_ok(run1, 0)
    # contacts: only the rows that did not end created/updated last time (invalid,
    # duplicate) are prepared again, to be reported again
    assert mapped["contacts.csv"] == _not_ok(run1, 1)
    r1 = {(r["step"], r["source_row"]): r for r in _results(run1.report_dir)}
    for r in _results(run2.report_dir):
        before = r1[(r["step"], r["source_row"])]
        if before["status"] in ("created", "updated"):
            assert r["status"] == "unchanged" and r["record_id"] == before["record_id"]
            # the key it would be sent by: companies (match_by_ledger_id) by its record id
            key = (
                ("id", before["record_id"])
                if r["step"] == "companies"
                else (before["match_by"], before["match_value"])
            )
            assert (r["match_by"], r["match_value"]) == key
        else:
            assert r["status"] == before["status"]


def test_full_refresh_and_a_retry_leave_the_next_run_on_the_full_path(tmp_path: Path) -> None:
    pipeline = _copy_project(tmp_path / "project")
    work = tmp_path / "work"
    with served(work / "sandbox.db") as url:
        run_pipeline(_request(pipeline, work), target=target(url))
        refreshed = run_pipeline(_request(pipeline, work, full_refresh=True), target=target(url))
    assert refreshed.summary["totals"]["rows_unchanged"] == 0
    store = StateStore(work / "state" / "state.db")
    try:  # a full refresh that completes writes a new snapshot
        assert store._conn.execute("SELECT count(*) FROM snapshots").fetchone()[0] == 2
        store.forget(only_key(store, "nightly"))
        assert store._conn.execute("SELECT count(*) FROM snapshots").fetchone()[0] == 0
    finally:
        store.close()
    assert not any((work / "state" / "snapshots").iterdir())


@pytest.mark.parametrize("scans", [0, 32])
def test_the_fast_path_with_its_per_row_arrays_on_disk_reports_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scans: int
) -> None:
    """The first pass's per-batch arrays (``SeenLog``) and the snapshot's sorted digests
    (``SortedDigests``) forced to temporary files past a few rows: the same results, totals,
    rows mapped and next snapshots as with them in memory (the edited export of the test
    above: a clash, a row exported twice, a malformed line). With ``scans``, the first
    look-ups of a few digests read the snapshot's instead of sorting them."""
    pipeline, first, _ = _first_run(tmp_path)
    _edit_contacts(tmp_path / "project" / "sample_data" / "contacts.csv")
    memory_dir, disk_dir = tmp_path / "memory", tmp_path / "disk"
    _clone(first, memory_dir)
    _clone(first, disk_dir)
    in_memory, memory_mapped = _run_counting(monkeypatch, pipeline, memory_dir)

    spilled: list[SeenLog] = []
    append = SeenLog.append

    def counting(self: SeenLog, seen: Any) -> None:
        append(self, seen)
        if self.spilled and self not in spilled:
            spilled.append(self)

    sorted_on_disk: list[int] = []

    class Sorted(SortedDigests):
        def __init__(self, batches: Any, release: Any) -> None:
            super().__init__(batches, release)
            sorted_on_disk.append(self.size)

    monkeypatch.setattr(sizes, "SEEN_SPILL_ROWS", 7)
    monkeypatch.setattr(sizes, "DUPLICATE_SPILL_ROWS", 5)  # the key hashes' groups too
    monkeypatch.setattr(SeenLog, "append", counting)
    monkeypatch.setattr(sizes, "SNAPSHOT_MEMORY_ROWS", 5)
    monkeypatch.setattr(sizes, "DIGEST_SCANS", scans)
    monkeypatch.setattr(snapshot_match, "SortedDigests", Sorted)
    on_disk, disk_mapped = _run_counting(monkeypatch, pipeline, disk_dir)

    assert len(spilled) == 2  # companies and contacts
    if not scans:
        assert len(sorted_on_disk) == 2 and min(sorted_on_disk) > 5
    assert _results(on_disk.report_dir) == _results(in_memory.report_dir)
    assert on_disk.summary["totals"] == in_memory.summary["totals"]
    assert disk_mapped == memory_mapped
    assert on_disk.summary["totals"]["rows_unchanged"] > 900
    assert _snapshots(disk_dir) == _snapshots(memory_dir)  # the rows' digests, kept too


def _snapshots(work: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    """Each snapshot the last run left (by scope), its rows."""
    out = []
    for path in sorted((work / "state" / "snapshots").glob("*.arrow")):
        table = file_reader(path).read_all()
        out.append((path.name.split("-")[0], table.to_pylist()))
    assert len(out) == 2
    return out


def _edit_mapping(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_settings_that_steer_the_run_keep_the_snapshot_and_others_say_why_it_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline, work, run1 = _first_run(tmp_path)
    mapping = tmp_path / "project" / "configs" / "contacts.yaml"
    # a description, a read batch size and a volume guard's limit make no batch input
    _edit_mapping(mapping, "  encoding: utf-8\n", "  encoding: utf-8\n  batch_size: 7\n")
    _edit_mapping(
        mapping,
        "object_type: contacts\n",
        "object_type: contacts\ndescription: the CRM export\nvolume_guard: {max_drop: 0.9}\n",
    )
    run2, mapped = _run_counting(monkeypatch, pipeline, work)
    assert mapped["contacts.csv"] == _not_ok(run1, 1)  # the snapshot vouched for the rest
    assert not [w for w in run2.summary.get("warnings") or [] if "changed since" in w]

    # a null marker no cell holds changes no value, but it could: every row mapped again,
    # compared with the ledger, nothing sent, and the report says why the run took longer
    _edit_mapping(mapping, "  batch_size: 7\n", "  null_values: ['n/a']\n")
    run3, mapped = _run_counting(monkeypatch, pipeline, work)
    assert mapped["contacts.csv"] == run3.summary["steps"][1]["rows_read"]
    assert run3.summary["totals"]["rows_sent"] == 0
    said = [w for w in run3.summary["warnings"] if "changed since the last run" in w]
    assert len(said) == 1 and said[0].startswith("step contacts: ")
    run4, mapped = _run_counting(monkeypatch, pipeline, work)  # and the next run is quick
    assert mapped["contacts.csv"] == _not_ok(run1, 1)
    assert not [w for w in run4.summary.get("warnings") or [] if "changed since" in w]
