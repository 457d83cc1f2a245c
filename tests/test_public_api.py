"""The public surface (recordsync/__init__.py, docs/architecture.md "Using recordsync as a
library"): every name of ``__all__`` importable, ``import recordsync`` light, the
integrations importing only from the surface or the stages they call, and the doc's example
run as written against the embedded sandbox."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.test_layout import Graph

import recordsync
from recordsync.core import errors

REPO = Path(__file__).resolve().parents[1]
SRC = str(Path(recordsync.__file__).resolve().parents[1])
INTEGRATIONS_MAY_IMPORT = ("recordsync.integrations", "recordsync.run", "recordsync.report")
"""Besides the public surface (``recordsync`` itself): their own package and the stages they
call (a run, and its report's counts and wording)."""


def test_every_public_name_is_importable_and_is_its_module_s_own() -> None:
    assert len(set(recordsync.__all__)) == len(recordsync.__all__)
    for name in recordsync.__all__:
        value = getattr(recordsync, name)
        assert value is not None, name
    assert set(recordsync.__all__) == {"__version__", *recordsync._WHERE}
    assert recordsync.RunRequest.__module__ == "recordsync.run.pipeline"
    assert recordsync.RunResult.__module__ == "recordsync.run.runner"


def test_every_error_class_is_public() -> None:
    tree = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, errors.RecordsyncError)
    }
    assert tree <= set(recordsync.__all__), sorted(tree - set(recordsync.__all__))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        recordsync.nope  # noqa: B018


def test_importing_the_package_loads_no_run_stack() -> None:
    code = (
        "import sys, recordsync\n"
        "print(sorted(m for m in sys.modules if m.startswith(('httpx', 'pyarrow', 'recordsync.'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()
    assert out == "['recordsync.core', 'recordsync.core.version']"


def test_the_integrations_import_only_the_public_surface_run_and_report() -> None:
    graph = Graph.read()
    wrong = [
        f"{module} imports {name}"
        for module, edges in sorted(graph.edges.items())
        if module.startswith("recordsync.integrations")
        for name in sorted(edges)
        if name != "recordsync"
        and not any(name == p or name.startswith(p + ".") for p in INTEGRATIONS_MAY_IMPORT)
    ]
    assert not wrong, "\n".join(wrong)


def _example() -> str:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Using recordsync as a library", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None
    return found.group(1)


def test_the_architecture_doc_s_example_runs_against_the_sandbox(project: Path) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_example(), "docs/architecture.md", "exec"), {"__name__": "example"})
    code, rows, report_dir = printed.getvalue().split()
    assert code == "1"  # the sample's invalid rows, as the README says
    assert int(rows) > 0
    assert (Path(report_dir) / "summary.json").is_file()
