"""``python -m recordsync`` (and the console script) exit through :func:`recordsync.cli.entry`:
the command's own code and all of its output, with no interpreter teardown after it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from recordsync import __version__


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recordsync", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )


def test_the_exit_code_and_the_piped_output_survive_the_fast_exit(tmp_path: Path) -> None:
    done = run("--version", cwd=tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, f"recordsync, version {__version__}")
    missing = run("validate", str(tmp_path / "nope.yaml"), cwd=tmp_path)
    assert missing.returncode == 2
    assert "nope.yaml" in missing.stderr
    usage = run("no-such-command", cwd=tmp_path)
    assert usage.returncode == 2 and "No such command" in usage.stderr


def test_a_run_with_bad_rows_exits_1_with_its_report_printed(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("Name,Stage\nA,won\nB,nonsense\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text(
        "object_type: deals\nsource: {path: d.csv}\nname: Name\nfields: {stage: Stage}\n",
        encoding="utf-8",
    )
    done = run("run", "d.yaml", "--dry-run", "--no-state", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("recordsync run ") and "(dry run)" in done.stdout
    assert done.stderr.splitlines()[-1].startswith("dry run: 1 of 2 rows not ok (1 invalid): see")
