"""Every injected fault, over a real loopback socket: nothing lost, nothing created twice."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from recordsync.core.model import PreparedRow, RowStatus, SourceRow, StepPlan
from recordsync.run.runner import run_plans
from recordsync.send.step import SendOptions

from .support import KEY, all_records, loopback_client, served, target


def rows(object_type: str, n: int, twins: int = 0) -> list[PreparedRow]:
    out = []
    for i in range(n):
        name = "Twin" if i < twins else f"{object_type} {i}"
        fields: dict[str, Any] = {}
        if object_type == "contacts":
            fields["email"] = f"p{i}@x.example"
        elif object_type == "deals":
            fields["stage"] = "won"
        out.append(
            PreparedRow(
                SourceRow("src.csv", i + 2, {"n": str(i)}),
                RowStatus.VALID,
                {"name": name, "fields": fields},
            )
        )
    return out


def run_with(
    tmp_path: Path, faults: list[str], object_type: str, n: int, twins: int = 0, **retry: Any
) -> tuple[Any, list[dict[str, Any]]]:
    with served(tmp_path / "s.db", faults) as url, loopback_client(url, **retry) as client:
        result = run_plans(
            [StepPlan("step", "m.yaml", object_type, lambda: iter(rows(object_type, n, twins)))],
            pipeline="e2e",
            report_root=tmp_path / "reports",
            options=SendOptions(20, 5),
            client=client,
            target=target(url),
        )
        held = all_records(url, object_type)
    return result, held


def check_no_loss_no_duplicates(result: Any, held: list[dict[str, Any]], n: int) -> Counter[str]:
    totals = result.summary["totals"]
    assert result.summary["accounting_ok"], result.summary["accounting_errors"]
    assert totals["rows_read"] == n
    assert totals["created"] + totals["updated"] + totals["failed"] + totals["in_doubt"] == n
    names = Counter(r["name"] for r in held)
    assert all(count == 1 for name, count in names.items() if name != "Twin")
    return Counter(totals)


@pytest.mark.parametrize("object_type", ["deals", "contacts", "companies"])
def test_503_every_third_batch_is_retried_to_completion(tmp_path: Path, object_type: str) -> None:
    result, held = run_with(tmp_path, ["status:503:every=3:path=/batch"], object_type, 60)
    totals = check_no_loss_no_duplicates(result, held, 60)
    assert totals["created"] == 60 and len(held) == 60
    assert result.exit_code == 0


def test_429_with_retry_after_is_waited_out(tmp_path: Path) -> None:
    result, held = run_with(tmp_path, ["429:every=2:retry_after=0:path=/batch"], "deals", 45)
    assert check_no_loss_no_duplicates(result, held, 45)["created"] == 45


def test_drop_after_apply_never_duplicates_custom_objects(tmp_path: Path) -> None:
    result, held = run_with(tmp_path, ["drop-after-apply:every=2:path=/batch"], "deals", 60)
    totals = check_no_loss_no_duplicates(result, held, 60)
    # every dropped chunk was applied, then read back (never resent): each row its record
    assert len(held) == 60
    assert totals["created"] == 60 and totals["in_doubt"] == 0


def test_drop_after_apply_holds_ambiguous_names_in_doubt(tmp_path: Path) -> None:
    result, held = run_with(
        tmp_path,
        ["drop-after-apply:every=1:path=/batch:after=0"],
        "deals",
        8,
        twins=2,
        max_attempts=2,
    )
    totals = check_no_loss_no_duplicates(result, held, 8)
    assert totals["in_doubt"] == 2  # the twins: same name, same values, both applied
    names = Counter(r["name"] for r in held)
    assert names["Twin"] == 2  # applied once by the lost first try, never resent
    # the other rows were read back and took their own record: no extra records
    assert len(held) == 8 and totals["created"] == 6


def test_drop_after_apply_contacts_are_safe_to_resend(tmp_path: Path) -> None:
    result, held = run_with(tmp_path, ["drop-after-apply:every=3:path=/batch"], "contacts", 50)
    totals = check_no_loss_no_duplicates(result, held, 50)
    assert totals["in_doubt"] == 0 and len(held) == 50


def test_drop_before_apply_and_latency(tmp_path: Path) -> None:
    result, held = run_with(tmp_path, ["latency:5ms", "drop:every=4:path=/batch"], "deals", 40)
    totals = check_no_loss_no_duplicates(result, held, 40)
    assert totals["created"] + totals["updated"] == 40 and len(held) == 40


def test_the_key_never_shows(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    result, _ = run_with(
        tmp_path, ["status:503:every=2:path=/batch", "drop-after-apply:every=5"], "deals", 30
    )
    assert KEY not in caplog.text
    for path in result.report_dir.iterdir():
        assert KEY not in path.read_text()
    assert KEY not in repr(result) and KEY not in str(result.summary)
