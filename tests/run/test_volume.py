"""Source-volume guards against the sandbox over loopback: a step whose source shrank beyond
``volume_guard.max_drop`` against the last healthy runs refuses its mirror deletes (or, with
``on_drop: skip_step``, sends nothing), exits 1 and says why in summary.json and report.md;
a run that tripped a guard is no baseline for the next."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.support import all_records, served, target

from recordsync.core.errors import ConfigError
from recordsync.report.reason import why_rows_not_ok
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy
from recordsync.state import StateStore
from recordsync.state.history import RunHistory


def people(tmp: Path, keep: list[int], *, suffix: str = "") -> None:
    with open(tmp / "m.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["Name", "Email"])
        w.writerows([f"P{i}{suffix}", f"p{i}@v.example"] for i in keep)


def pipeline(tmp: Path, guard: str | None = None, *, mirror: bool = True) -> Path:
    text = (
        "object_type: contacts\nsource: {path: m.csv}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email}\n"
    )
    if mirror:
        text += "mirror_deletes: {enabled: true, max_share: 1.0}\n"
    if guard is not None:
        text += f"volume_guard: {guard}\n"
    (tmp / "m.yaml").write_text(text, encoding="utf-8")
    path = tmp / "vol.yaml"
    path.write_text("steps: [m.yaml]\n", encoding="utf-8")
    return path


def run(tmp: Path, path: Path, url: str, **kw: Any) -> Any:
    request = RunRequest(
        path,
        report_dir=tmp / "reports",
        state_db=tmp / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
        **kw,
    )
    return run_pipeline(request, target=target(url))


def test_a_drop_beyond_half_refuses_the_mirror_deletes_and_exits_1(tmp_path: Path) -> None:
    path = pipeline(tmp_path)
    with served(tmp_path / "s.db") as url:
        people(tmp_path, list(range(10)))
        first = [run(tmp_path, path, url) for _ in range(2)]
        people(tmp_path, [0, 1, 2, 3])  # 60% fewer rows: a truncated export
        dropped = run(tmp_path, path, url)
        after_drop = len(all_records(url, "contacts"))
        people(tmp_path, list(range(9)))  # 10% fewer: within the guard, one real delete
        healthy = run(tmp_path, path, url)
        after_healthy = len(all_records(url, "contacts"))
    assert [r.exit_code for r in first] == [0, 0]
    assert first[0].summary["guards"] == []
    assert dropped.exit_code == 1
    assert dropped.summary["guards"] == [
        {
            "step": "m",
            "kind": "drop",
            "previous": 10,
            "current": 4,
            "threshold": 0.5,
            "action": "skip_deletes",
        }
    ]
    step = dropped.summary["steps"][0]
    assert step["deleted"] == 0 and "volume guard of step m" in step["mirror_deletes_skipped"]
    assert after_drop == 10  # nothing deleted
    line = why_rows_not_ok(dropped.summary, dropped.report_dir)
    assert line == (
        f"volume guard of m: 4 rows against 10 (skip deletes): see {dropped.report_dir}/report.md"
    )
    saved = json.loads((dropped.report_dir / "summary.json").read_text(encoding="utf-8"))
    assert saved["guards"] == dropped.summary["guards"]
    md = (dropped.report_dir / "report.md").read_text(encoding="utf-8")
    assert "## Volume guards" in md
    assert "- step m: the source has 4 rows against 10 in the last healthy runs" in md
    assert "mirror deletes refused" in md
    # the guarded run is no baseline: 9 rows against the healthy 10 is fine
    assert healthy.exit_code == 0 and healthy.summary["guards"] == []
    assert healthy.summary["steps"][0]["deleted"] == 1 and after_healthy == 9
    with StateStore(tmp_path / "state.db") as store:  # the drop raised the volume alert
        records = {r.run_id: r for r in RunHistory(store).runs("vol")}
    kept = records[dropped.summary["run_id"]]
    assert [c["id"] for c in kept.conditions] == ["volume"] and kept.alerted == ["volume"]
    assert "step m: 4 rows against 10 (skip_deletes)" in kept.conditions[0]["reason"]
    assert kept.steps[0]["guarded"] and not records[healthy.summary["run_id"]].conditions


def test_skip_step_sends_nothing_and_reports_every_row(tmp_path: Path) -> None:
    path = pipeline(tmp_path, "{max_drop: 30%, on_drop: skip_step}")
    with served(tmp_path / "s.db") as url:
        people(tmp_path, list(range(10)))
        healthy = run(tmp_path, path, url)
        people(tmp_path, [0, 1, 2, 3, 4, 5], suffix=" renamed")  # 40% fewer, and changed
        skipped = run(tmp_path, path, url)
        names = sorted(r["name"] for r in all_records(url, "contacts"))
    assert healthy.exit_code == 0
    assert skipped.exit_code == 1
    [guard] = skipped.summary["guards"]
    assert (guard["kind"], guard["previous"], guard["current"], guard["action"]) == (
        "drop",
        10,
        6,
        "skip_step",
    )
    assert guard["threshold"] == pytest.approx(0.3)
    t = skipped.summary["totals"]
    assert (t["rows_read"], t["rows_sent"], t["created"], t["updated"], t["deleted"]) == (
        6,
        0,
        0,
        0,
        0,
    )
    assert t["rows_not_ok"] == 6 and skipped.summary["accounting_ok"]
    assert names == sorted(f"P{i}" for i in range(10))  # nothing renamed, nothing deleted
    with open(skipped.report_dir / "failures.csv", newline="", encoding="utf-8") as f:
        errors = {row["_error"] for row in csv.DictReader(f)}
    assert len(errors) == 1
    assert next(iter(errors)).startswith("not sent: step skipped by its volume guard: ")


def test_an_empty_source_where_there_were_rows_trips_the_guard(tmp_path: Path) -> None:
    path = pipeline(tmp_path, mirror=False)
    with served(tmp_path / "s.db") as url:
        people(tmp_path, list(range(3)))
        first = run(tmp_path, path, url)
        people(tmp_path, [])
        empty = run(tmp_path, path, url)
        off = pipeline(tmp_path, "{enabled: false}", mirror=False)
        unguarded = run(tmp_path, off, url)
    assert first.exit_code == 0
    assert empty.exit_code == 1
    assert [
        (g["kind"], g["previous"], g["current"], g["action"]) for g in empty.summary["guards"]
    ] == [("empty", 3, 0, "alert")]
    assert unguarded.exit_code == 0 and unguarded.summary["guards"] == []


@pytest.mark.parametrize(
    ("guard", "says"),
    [
        ("{max_drop: 150%}", "max_drop must be between 0% and 100%"),
        ("{max_drop: half}", "max_drop is a share: write 50% or 0.5"),
        ("{on_drop: delete_anyway}", "skip_deletes"),
        ("{max_dorp: 50%}", "max_dorp"),
    ],
)
def test_a_bad_guard_is_refused_naming_the_key(tmp_path: Path, guard: str, says: str) -> None:
    path = pipeline(tmp_path, guard)
    people(tmp_path, [0])
    with pytest.raises(ConfigError) as err:
        run_pipeline(RunRequest(path, report_dir=tmp_path / "r", state_db=tmp_path / "s.db"))
    text = str(err.value)
    assert "volume_guard" in text and says in text and "m.yaml" in text
