"""The README's "A one-off import" section, run as written against the embedded sandbox."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

from tests.acceptance.support import REPO, recordsync


def section() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return text.split("## A one-off import", 1)[1].split("\n## ", 1)[0]


def test_the_readme_one_off_import_commands_run_as_written(tmp_path: Path) -> None:
    for d in ("configs", "sample_data", "pipelines"):
        shutil.copytree(REPO / d, tmp_path / d)
    bash, yaml_excerpt = re.findall(r"```(?:bash|yaml)\n(.*?)```", section(), re.S)
    commands = [shlex.split(line.split("#")[0]) for line in bash.splitlines() if line.strip()]
    assert [c[:2] for c in commands] == [["recordsync", "init"], ["recordsync", "run"],
                                         ["recordsync", "import"]]
    for command in commands:
        done = recordsync(*command[1:], cwd=tmp_path, key=None, timeout=120)
        assert done.code == 1, done.err  # the sample's bad rows, as the README says
        assert "using the embedded sandbox" in done.err
    written = (tmp_path / "companies.yaml").read_text(encoding="utf-8")
    for line in yaml_excerpt.splitlines():  # the excerpt is what init wrote
        assert line in written.splitlines(), line
    kept = sorted((tmp_path / "reports").glob("*/contacts.yaml"))
    assert len(kept) == 1
    before = set((tmp_path / "reports").iterdir())
    again = recordsync("run", kept[0].relative_to(tmp_path), cwd=tmp_path, key=None, timeout=120)
    assert again.code == 1
    (last,) = set((tmp_path / "reports").iterdir()) - before
    totals = json.loads((last / "summary.json").read_text())["totals"]
    assert totals["created"] == 0 and totals["rows_read"] == 501
