"""The package layout (docs/architecture.md): the import graph of ``src/recordsync``.

Imports are read from the source (every ``import`` statement, also inside functions and
``TYPE_CHECKING`` blocks), not from ``sys.modules``, so a lazy import counts too. The test
fails on a circle between modules, a circle between top-level packages, an import a stage
must never make, and a lazy import of a recordsync module that is neither an optional
dependency's wrapper nor one of the command line's lazy commands. Sizes are not checked:
a module is as long as its concept.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "recordsync"

OPTIONAL = (
    "psycopg",
    "adbc_driver_postgresql",
    "duckdb",
    "fsspec",
    "dagster",
    "airflow",
    "pyarrow.parquet",
    "pyarrow.fs",
    "starlette",
    "uvicorn",
)
"""Dependencies a run may not have (the extras) or should not pay for (Parquet and remote
filesystems for a CSV run, the sandbox's web stack for a run against the hosted service): a
module importing one of them (anywhere in its body) may be imported lazily, so that only the
runs that need it load it."""

LAZY_IMPORTERS = ("recordsync.cli",)
"""The command line resolves its commands lazily (start-up time of every run)."""
LAZY_MODULES = ("recordsync",)
"""The public surface (``recordsync/__init__.py``) resolves its names when first used, so
that importing any module of the package does not load the whole run."""

NEVER: dict[str, tuple[str, ...]] = {
    "recordsync.core": ("recordsync",),
    "recordsync.state": (
        "recordsync.send",
        "recordsync.run",
        "recordsync.nightly",
        "recordsync.report",
        "recordsync.map",
        "recordsync.prepare",
        "recordsync.read",
    ),
    "recordsync.send": ("recordsync.run", "recordsync.nightly", "recordsync.cli"),
    "recordsync.integrations": ("recordsync.cli",),
}
"""Package -> what none of its modules imports (its own package excepted)."""

ONLY: dict[str, tuple[str, ...]] = {
    "recordsync.config": ("recordsync.core",),
    "recordsync.report": (
        "recordsync.core",
        "recordsync.config",
        "recordsync.tuning",
        "recordsync.reconcile",
    ),
    "recordsync.reconcile": ("recordsync.core", "recordsync.config"),
}
"""Package -> the only packages its modules import (besides its own): the config files take
only the ground (what a file says is checked without reading a source); the report and the
answer checks take the shared types and the mapping they describe; the report also the spill
of per-row facts and the answer checks' reading of a rejected value."""

KNOWN: set[tuple[str, str]] = set()
"""Imports that break the rules above today, each (importer, imported); the layout work
removes them, and the test fails when an entry is no longer a break."""


@dataclass(frozen=True)
class Import:
    module: str
    lazy: bool


def modules_of(src: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((src / "recordsync").rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _resolve(name: str, modules: Mapping[str, Path]) -> str:
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return name


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(path: Path, module: str, modules: Mapping[str, Path]) -> dict[str, Import]:
    """The recordsync modules ``path`` (the module ``module``) imports, relative ones resolved
    and ``from package import submodule`` read as the submodule; each marked lazy when the
    statement sits in a function or a ``TYPE_CHECKING`` block (a top-level one wins)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: dict[str, Import] = {}

    def add(name: str, lazy: bool) -> None:
        if name != module and (name not in out or out[name].lazy):
            out[name] = Import(name, lazy)

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            deeper = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            deeper = deeper or (isinstance(child, ast.If) and _is_type_checking(child))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "recordsync":
                        add(_resolve(alias.name, modules), deeper)
            elif isinstance(child, ast.ImportFrom):
                base = package.split(".")
                base = base[: len(base) - child.level + 1] if child.level else []
                name = ".".join([*base, child.module] if child.module else base)
                if name.split(".")[0] != "recordsync":
                    continue
                for alias in child.names:
                    sub = f"{name}.{alias.name}"
                    add(sub if sub in modules else _resolve(name, modules), deeper)
            visit(child, deeper)

    visit(ast.parse(path.read_text("utf-8"), str(path)), False)
    return out


def _uses_optional(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        if any(n == o or n.startswith(o + ".") for n in names for o in OPTIONAL):
            return True
    return False


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def top_of(module: str) -> str:
    """The top-level package (or module) ``module`` belongs to."""
    return ".".join(module.split(".")[:2])


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def _layers(graph: Mapping[str, Iterable[str]]) -> int:
    """The longest chain of imports between packages (1 = nothing imports anything)."""
    depth: dict[str, int] = {}

    def of(node: str, seen: frozenset[str]) -> int:
        if node not in depth:
            below = [of(n, seen | {node}) for n in graph.get(node, ()) if n not in seen | {node}]
            depth[node] = 1 + max(below, default=0)
        return depth[node]

    return max((of(node, frozenset()) for node in graph), default=0)


@dataclass
class Graph:
    modules: dict[str, Path]
    edges: dict[str, dict[str, Import]]

    @classmethod
    def read(cls, src: Path = SRC) -> Graph:
        modules = modules_of(src)
        return cls(modules, {m: imports_of(p, m, modules) for m, p in modules.items()})

    def without(self, known: set[tuple[str, str]]) -> Graph:
        edges = {
            m: {n: i for n, i in e.items() if (m, n) not in known} for m, e in self.edges.items()
        }
        return Graph(self.modules, edges)

    def module_graph(self) -> dict[str, set[str]]:
        return {m: set(e) for m, e in self.edges.items()}

    def package_graph(self) -> dict[str, set[str]]:
        graph: dict[str, set[str]] = {}
        for module, edges in self.edges.items():
            here = graph.setdefault(top_of(module), set())
            here.update(top_of(n) for n in edges if top_of(n) != top_of(module))
        return graph

    def breaks(self) -> list[str]:
        """Every import that breaks a rule (cycles are reported by ``measures``)."""
        out: list[str] = []
        optional = {m for m, p in self.modules.items() if _uses_optional(p)}
        for module, edges in sorted(self.edges.items()):
            for name, found in sorted(edges.items()):
                out.extend(
                    f"{module} imports {name}: {why}" for why in _why(module, found, optional)
                )
        return out

    def measures(self) -> str:
        modules, packages = cycles(self.module_graph()), cycles(self.package_graph())
        largest = max(
            self.modules, key=lambda m: len(self.modules[m].read_text("utf-8").splitlines())
        )
        lines = len(self.modules[largest].read_text("utf-8").splitlines())
        acyclic = not packages
        text = [
            f"module cycles: {len(modules)}",
            *(f"  {' <-> '.join(c)}" for c in modules),
            f"package cycles: {len(packages)}",
            *(f"  {' <-> '.join(c)}" for c in packages),
            f"package layers: {_layers(self.package_graph()) if acyclic else 'n/a (cyclic)'}",
            f"largest module: {largest} ({lines} lines)",
        ]
        return "\n".join(text)


def _why(module: str, found: Import, optional: set[str]) -> list[str]:
    name = found.module
    reasons: list[str] = []
    allowed_lazy = module in LAZY_MODULES or any(_within(module, p) for p in LAZY_IMPORTERS)
    if found.lazy and name not in optional and not allowed_lazy:
        reasons.append("lazy import of a recordsync module (only optional dependencies and cli)")
    for package, forbidden in NEVER.items():
        inside = _within(module, package) and not _within(name, package)
        if inside and any(_within(name, f) for f in forbidden):
            reasons.append(f"{package} never imports {name}")
    for package, allowed in ONLY.items():
        inside = _within(module, package) and not _within(name, package)
        if inside and not any(_within(name, a) for a in allowed):
            reasons.append(f"{package} takes only from {', '.join(allowed)}")
    return reasons


def _cycle_edges(graph: Graph) -> set[tuple[str, str]]:
    """Module imports that close a circle, between modules or between packages."""
    out: set[tuple[str, str]] = set()
    module_sccs = {m: i for i, c in enumerate(cycles(graph.module_graph())) for m in c}
    package_sccs = {p: i for i, c in enumerate(cycles(graph.package_graph())) for p in c}
    for module, edges in graph.edges.items():
        for name in edges:
            if module in module_sccs and module_sccs[module] == module_sccs.get(name):
                out.add((module, name))
            top, other = top_of(module), top_of(name)
            if (
                top != other
                and top in package_sccs
                and package_sccs[top] == package_sccs.get(other)
            ):
                out.add((module, name))
    return out


def test_the_import_graph_has_no_circles_and_keeps_the_rules() -> None:
    graph = Graph.read().without(KNOWN)
    problems = [
        *(f"circle: {a} imports {b}" for a, b in sorted(_cycle_edges(graph))),
        *graph.breaks(),
    ]
    assert not problems, "\n".join([graph.measures(), *problems])


def still_breaking(graph: Graph) -> set[tuple[str, str]]:
    """The imports that break a rule or close a circle, each (importer, imported)."""
    optional = {m for m, p in graph.modules.items() if _uses_optional(p)}
    rules = {(m, n) for m, e in graph.edges.items() for n, i in e.items() if _why(m, i, optional)}
    return rules | _cycle_edges(graph)


def test_every_known_break_is_still_one() -> None:
    stale = sorted(KNOWN - still_breaking(Graph.read()))
    assert not stale, "drop from KNOWN (no longer a break):\n" + "\n".join(map(str, stale))


def test_imports_are_read_from_every_statement(tmp_path: Path) -> None:
    pkg = tmp_path / "recordsync" / "report"
    pkg.mkdir(parents=True)
    (tmp_path / "recordsync" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    send = tmp_path / "recordsync" / "send"
    send.mkdir()
    for name in ("__init__", "step", "plan", "sender"):
        (send / f"{name}.py").write_text("")
    (pkg / "x.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from ..send import step\n"
        "if TYPE_CHECKING:\n"
        "    import recordsync.send.plan\n"
        "def f() -> None:\n"
        "    from recordsync.send.sender import ChunkSender\n"
    )
    graph = Graph.read(tmp_path)
    found = graph.edges["recordsync.report.x"]
    assert found == {
        "recordsync.send.step": Import("recordsync.send.step", lazy=False),
        "recordsync.send.plan": Import("recordsync.send.plan", lazy=True),
        "recordsync.send.sender": Import("recordsync.send.sender", lazy=True),
    }
    assert graph.breaks() == [
        "recordsync.report.x imports recordsync.send.plan: lazy import of a recordsync module"
        " (only optional dependencies and cli)",
        "recordsync.report.x imports recordsync.send.plan: recordsync.report takes only from"
        " recordsync.core, recordsync.config, recordsync.tuning, recordsync.reconcile",
        "recordsync.report.x imports recordsync.send.sender: lazy import of a recordsync module"
        " (only optional dependencies and cli)",
        "recordsync.report.x imports recordsync.send.sender: recordsync.report takes only from"
        " recordsync.core, recordsync.config, recordsync.tuning, recordsync.reconcile",
        "recordsync.report.x imports recordsync.send.step: recordsync.report takes only from"
        " recordsync.core, recordsync.config, recordsync.tuning, recordsync.reconcile",
    ]


def test_circles_are_found_between_modules_and_packages() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert _layers({"a": {"b"}, "b": {"c"}, "c": set()}) == 3
