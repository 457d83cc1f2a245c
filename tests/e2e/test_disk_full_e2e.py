"""A full disk under the report or the state directory is a named error with a next step:
exit 2 when nothing was sent, 3 when the run stopped after sending; never a traceback
with exit 1. The faults are injected at the write sites (OSError ENOSPC, SQLite's "database
or disk is full"); the runs go against the sandbox over loopback through the CLI."""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from recordsync.report import rows_file as rows_file_module
from recordsync.state import Journal, StateStore

from .support import KEY, all_records, journal_full_at_the_third_chunk, served
from .test_ledger_e2e import write, write_csv

ROWS = [[f"Person {i}", f"p{i}@x.example"] for i in range(30)]


class FullDisk:
    """A text file that accepts ``room`` writes, then fails with ENOSPC."""

    def __init__(self, file: IO[str], room: int) -> None:
        self.file, self.room = file, room

    def write(self, text: str) -> int:
        self.room -= 1
        if self.room < 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.file.write(text)

    @property
    def closed(self) -> bool:
        return self.file.closed

    def close(self) -> None:
        self.file.close()


def _setup(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    write_csv(tmp / "people.csv", ["Name", "Email"], ROWS)
    write(
        tmp / "people.yaml",
        "object_type: contacts\nsource: {path: people.csv}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email}\n",
    )
    write(tmp / "p.yaml", "name: people\nsteps: [people.yaml]\nsend: {chunk_size: 10}\n")
    monkeypatch.setenv("RECORDSYNC_API_KEY", KEY)
    monkeypatch.chdir(tmp)
    return ["run", "p.yaml", "-q", "--state-db", "st/state.db", "--report-dir", "reports"]


def _full_then_room(
    tmp: Path,
    args: list[str],
    cli: Callable[..., int],
    capsys: pytest.CaptureFixture[str],
    *,
    target: object,
    name: str,
    full: Callable[..., Any],
) -> str:
    """A run with ``target.name`` replaced by ``full``: exit 3, no traceback; then one with
    room again: exit 0, every row exactly once in the service. The first run's stderr."""
    with served(tmp / "s.db") as url:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(target, name, full, raising=False)
            code = cli(*args, "--base-url", url)
        err = capsys.readouterr().err
        again = cli(*args, "--base-url", url)
        emails = sorted(r["email"] for r in all_records(url, "contacts"))
    assert code == 3 and "Traceback" not in err
    assert again == 0 and emails == sorted(r[1] for r in ROWS)
    return err


def test_a_full_disk_under_the_report_directory_aborts_with_exit_3(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli: Callable[..., int],
) -> None:
    args = _setup(tmp_path, monkeypatch)

    def full_open(path: Any, mode: str = "r", *args: Any, **kw: Any) -> Any:
        real = open(path, mode, *args, **kw)  # noqa: SIM115
        # room for the header and one chunk's lines (written at once, or line by line)
        return FullDisk(real, 2) if "w" in mode and str(path).endswith("results.csv") else real

    err = _full_then_room(  # then resumed, no duplicate
        tmp_path, args, cli, capsys, target=rows_file_module, name="open", full=full_open
    )
    assert "cannot write the report in reports/" in err and "No space left on device" in err
    assert "free space on that disk" in err


def test_a_full_disk_under_the_state_directory_aborts_with_exit_3_and_resumes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli: Callable[..., int],
) -> None:
    args = _setup(tmp_path, monkeypatch)
    full = journal_full_at_the_third_chunk()
    err = _full_then_room(
        tmp_path, args, cli, capsys, target=Journal, name="begin_chunk", full=full
    )
    assert "cannot write the state store st/state.db: database or disk is full" in err
    assert "the next run resumes this one" in err


def test_a_state_store_that_cannot_be_opened_is_exit_2_with_nothing_sent(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli: Callable[..., int],
) -> None:
    args = _setup(tmp_path, monkeypatch)

    def no_room(self: StateStore, *a: Any, **kw: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with served(tmp_path / "s.db") as url:
        monkeypatch.setattr(StateStore, "__init__", no_room)
        code = cli(*args, "--base-url", url)
        records = all_records(url, "contacts")
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "st/state.db: cannot open the state store: No space left on device" in err
    assert "nothing was sent" in err and records == []


def test_a_resumed_runs_report_counts_every_attempts_chunks(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., int],
) -> None:
    """The first attempt sends two chunks of 10 rows and stops as it journals the third (a
    failed state write; the second chunk's answer is acknowledged on its own); the resumed
    attempt sends the 10 rows left: 3 chunks in 2 attempts (the last attempt alone: 1)."""
    import json

    args = _setup(tmp_path, monkeypatch)
    with served(tmp_path / "s.db") as url:
        with monkeypatch.context() as m:
            m.setattr(Journal, "begin_chunk", journal_full_at_the_third_chunk())
            assert cli(*args, "--base-url", url) == 3
        assert cli(*args, "--base-url", url) == 0
    [report] = [p for p in (tmp_path / "reports").iterdir() if ".partial" not in p.name]
    summary = json.loads((report / "summary.json").read_text())
    [step] = summary["steps"]
    assert summary["attempts"] == 2 and step["attempts"] == 2
    assert step["chunks"] == 3
