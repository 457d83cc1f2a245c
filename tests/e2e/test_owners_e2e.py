"""Owners against the sandbox over HTTP: a full name two users share is a row error naming
both (never one of them picked), pinning it in the owners file resolves it, and the summary
and report count each step's rows by how their owner was found."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from recordsync.run.pipeline import run_pipeline
from recordsync.sandbox import create_app
from recordsync.sandbox.server import run_in_thread

from .support import KEY, REPO, all_records, target
from .test_ledger_e2e import request, results, totals, write, write_csv

TWIN_A = "6f1c2a3b-0005-4000-8000-000000000005"
TWIN_B = "6f1c2a3b-0006-4000-8000-000000000006"
BEN = "6f1c2a3b-0002-4000-8000-000000000002"


@contextmanager
def served_with_twins(tmp: Path) -> Iterator[str]:
    """The default seed plus two users called "Sam Lee"."""
    seed = yaml.safe_load((REPO / "sample_data" / "seed.yaml").read_text("utf-8"))
    seed["users"] += [
        {"id": TWIN_A, "full_name": "Sam Lee", "access_level": "member", "email": "sam@a.example"},
        {"id": TWIN_B, "full_name": "Sam Lee", "access_level": "member", "email": "sam@b.example"},
    ]
    write(tmp / "seed.yaml", yaml.safe_dump(seed))
    app = create_app(tmp / "s.db", seed=tmp / "seed.yaml", api_key=KEY)
    try:
        with run_in_thread(app) as url:
            yield url
    finally:
        app.state.store.close()


def people(tmp: Path, owners_file: str | None = None) -> Path:
    write_csv(
        tmp / "people.csv",
        ["Name", "Email", "Owner"],
        [
            ["Ann", "ann@x.example", "Sam Lee"],
            ["Bob", "bob@x.example", "ben@acme.example"],
            ["Cy", "cy@x.example", "Ben Carter"],
            ["Di", "di@x.example", "nobody@acme.example"],
            ["Ed", "ed@x.example", ""],
        ],
    )
    extra = f"  owners_file: {owners_file}\n" if owners_file else ""
    write(
        tmp / "people.yaml",
        "object_type: contacts\nsource: {path: people.csv}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email}\nowner:\n  column: Owner\n" + extra,
    )
    return write(tmp / "owners-sync.yaml", "steps: [people.yaml]\n")


def test_a_name_two_users_share_is_invalid_and_owners_are_counted(tmp_path: Path) -> None:
    pipeline = people(tmp_path)
    with served_with_twins(tmp_path) as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
        stored = {r["email"]: r for r in all_records(url, "contacts")}
    rows = {r["source_row"]: r for r in results(result)}
    assert rows["2"]["status"] == "invalid"
    assert rows["2"]["error"] == (
        "column 'Owner' → owner: 'Sam Lee' fits 2 users: "
        f"sam@a.example (id {TWIN_A}), sam@b.example (id {TWIN_B}); pin the right one in an "
        "owners file (owner.owners_file in the mapping) with a line 'sam lee: <user id>'"
    )
    assert "ann@x.example" not in stored  # never sent with one of the two picked
    assert stored["cy@x.example"]["owned_by_user_id"] == BEN
    assert result.exit_code == 1
    assert totals(result, "people")["owners"] == {
        "by_email": 1,
        "by_name": 1,
        "by_id": 0,
        "owners_file": 0,
        "default": 0,
        "blank": 1,
        "unowned": 0,
        "unknown": 1,
        "ambiguous": 1,
        "offline": 0,
        "not_looked_up": 0,
    }
    report = (result.report_dir / "report.md").read_text("utf-8")
    assert "## Owners" in report
    assert "- people: by e-mail 1, by full name 1, blank cell 1, unknown 1, ambiguous 1" in report


def test_a_name_pinned_in_the_owners_file_goes_to_that_user(tmp_path: Path) -> None:
    write(tmp_path / "owners.yaml", f"Sam Lee: {TWIN_B}\n")
    pipeline = people(tmp_path, "owners.yaml")
    with served_with_twins(tmp_path) as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
        stored = {r["email"]: r for r in all_records(url, "contacts")}
    assert stored["ann@x.example"]["owned_by_user_id"] == TWIN_B
    owners = totals(result, "people")["owners"]
    assert (owners["owners_file"], owners["ambiguous"]) == (1, 0)


def test_a_nightly_rerun_counts_the_rows_it_did_not_look_up(tmp_path: Path) -> None:
    pipeline = people(tmp_path)
    with served_with_twins(tmp_path) as url:
        run_pipeline(request(tmp_path, pipeline), target=target(url))
        second = run_pipeline(request(tmp_path, pipeline), target=target(url))
    step = totals(second, "people")
    owners = step["owners"]
    assert sum(owners.values()) == step["rows_read"] == 5
    # the three rows sent last time are found unchanged from their cells, never mapped; the
    # invalid ones are prepared again, to be reported again
    assert (owners["not_looked_up"], owners["ambiguous"], owners["unknown"]) == (3, 1, 1)
    report = (second.report_dir / "report.md").read_text("utf-8")
    assert "- people: unknown 1, ambiguous 1, not looked up (unchanged" in report
