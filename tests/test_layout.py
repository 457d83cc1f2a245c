"""The package layout (docs/architecture.md): which stages may import which, and module sizes.

Imports are read from the source (every ``import`` statement, also inside functions and
``TYPE_CHECKING`` blocks), not from ``sys.modules``, so a lazy import counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "recordsync"

MAX_LINES = 600
"""No module of the package is longer: sized by its concept, most modules land between 100
and 400 lines and a central class may take 600 (the layout guide); past that, look for a
second concept in it. Never split a class across files to meet this number."""

NO_IMPORTS_FROM = {
    "recordsync.report": "recordsync.send",
    "recordsync.state": "recordsync.send",
    "recordsync.prepare": "recordsync.send",
}
"""Stage -> what none of its modules imports (the types both need live in model.py)."""
ALLOWED = {
    ("recordsync.state.hook", "recordsync.send.safety"),
    ("recordsync.state.hook_rows", "recordsync.send.safety"),
}
"""Known exceptions: the state store's hook holds in-doubt rows unless resending them is safe
(the sender's resend rule), which it must apply exactly as the sender does."""


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(path: Path, module: str) -> set[str]:
    """The recordsync modules ``path`` (the module ``module``) imports, relative ones resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[: len(base) - node.level + 1] if node.level else []
            name = ".".join([*base, node.module] if node.module else base)
            out.add(name)
            out.update(f"{name}.{alias.name}" for alias in node.names)  # a submodule import
    return {name for name in out if name == "recordsync" or name.startswith("recordsync.")}


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def layering_breaks(modules: dict[str, Path]) -> list[str]:
    breaks: list[str] = []
    for module, path in modules.items():
        for stage, forbidden in NO_IMPORTS_FROM.items():
            if not _within(module, stage):
                continue
            for name in sorted(imports_of(path, module)):
                allowed = any(module == m and _within(name, a) for m, a in ALLOWED)
                if _within(name, forbidden) and not allowed:
                    breaks.append(f"{module} imports {name}")
    return breaks


def size_breaks(package: Path) -> list[str]:
    breaks: list[str] = []
    for path in sorted(package.rglob("*.py")):
        lines = len(path.read_text("utf-8").splitlines())
        if lines > MAX_LINES:
            rel = path.relative_to(package).as_posix()
            breaks.append(f"{rel}: {lines} lines, over {MAX_LINES}: split it by stage")
    return breaks


def test_report_state_and_prepare_import_nothing_from_send() -> None:
    assert layering_breaks(_modules()) == []


def test_allowed_exceptions_are_still_needed() -> None:
    modules = _modules()
    for module, name in ALLOWED:
        assert name in imports_of(modules[module], module), f"drop ({module}, {name}) from ALLOWED"


def test_no_module_is_over_the_limit() -> None:
    assert size_breaks(PACKAGE) == []


def test_imports_are_read_from_every_statement(tmp_path: Path) -> None:
    pkg = tmp_path / "recordsync" / "report"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "x.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from ..send import step\n"
        "if TYPE_CHECKING:\n"
        "    import recordsync.send.plan\n"
        "def f() -> None:\n"
        "    from recordsync.send.sender import ChunkSender\n"
    )
    found = imports_of(pkg / "x.py", "recordsync.report.x")
    assert {"recordsync.send.step", "recordsync.send.plan", "recordsync.send.sender"} <= found
    assert layering_breaks({"recordsync.report.x": pkg / "x.py"}) == [
        "recordsync.report.x imports recordsync.send",
        "recordsync.report.x imports recordsync.send.plan",
        "recordsync.report.x imports recordsync.send.sender",
        "recordsync.report.x imports recordsync.send.sender.ChunkSender",
        "recordsync.report.x imports recordsync.send.step",
    ]


@pytest.mark.parametrize(
    ("rel", "lines", "expected"),
    [
        ("new.py", MAX_LINES, None),
        ("new.py", MAX_LINES + 1, f"new.py: {MAX_LINES + 1} lines, over {MAX_LINES}: split"),
        ("send/x.py", MAX_LINES + 5, f"send/x.py: {MAX_LINES + 5} lines, over {MAX_LINES}"),
    ],
)
def test_size_limit(tmp_path: Path, rel: str, lines: int, expected: str | None) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n" * 10)
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text("x = 1\n" * lines)
    breaks = size_breaks(tmp_path)
    if expected is None:
        assert breaks == []
    else:
        assert len(breaks) == 1 and breaks[0].startswith(expected)
