"""Mutation-test the safety-critical modules, one group at a time (not part of CI).

Each group's modules are mutated by mutmut (3.8.x, a dev tool installed apart from the dev
extras) and checked against the tests that cover that group, in a scratch copy of the project
so that the checkout's `mutants/` and `[tool.mutmut]` stay untouched. One child at a time: the
machine is shared. Prints, per module, mutants, killed, equivalent (listed in
mutation_equivalents.txt, the reasons in docs/run.md) and the time of its group, then every
survivor that is not a known equivalent; exits 1 when there is one.

    python bench/mutation.py                # every group
    python bench/mutation.py resend mirror  # some groups
    python bench/mutation.py --show --keep /tmp/mut writer  # survivors' diffs; keep the copy
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPIED = ("src", "tests", "pipelines", "configs", "sample_data", "pyproject.toml")


@dataclass(frozen=True)
class Group:
    modules: tuple[str, ...]
    tests: tuple[str, ...]
    deselect: tuple[str, ...] = ()
    """Tests of ``tests`` that cannot run under mutmut (each with its reason where named)."""


_CHILD_RUN = (
    "tests/cli/test_lazy_imports.py::test_a_run_into_a_service_imports_only_the_run_command"
)
"""Runs ``recordsync run`` in a child process whose working directory is a temporary one:
there mutmut's trampolines (in the mutated modules the run goes through) cannot find their
configuration and the child aborts, even unmutated. It checks imports, not accounting."""


GROUPS: dict[str, Group] = {
    "accounting": Group(
        ("src/recordsync/report/tally.py", "src/recordsync/core/errors.py"),
        ("tests/report/", "tests/core/test_errors.py", "tests/run/test_runner.py", "tests/cli/"),
        deselect=(_CHILD_RUN,),
    ),
    "resend": Group(
        (
            "src/recordsync/core/safety.py",
            "src/recordsync/send/settle.py",
            "src/recordsync/send/readback.py",
        ),
        (
            "tests/core/test_safety.py",
            "tests/core/test_safety_interference.py",
            "tests/send/test_settle.py",
            "tests/send/test_settle_holds.py",
            "tests/send/test_readback.py",
        ),
    ),
    "writer": Group(
        ("src/recordsync/report/writer.py",),
        (
            "tests/report/test_writer.py",
            "tests/report/test_writer_edges.py",
            "tests/report/test_writer_files.py",
            "tests/report/test_tally_merged.py",
        ),
    ),
    "mirror": Group(("src/recordsync/state/mirror.py",), ("tests/state/test_mirror.py",)),
    "classifier": Group(
        ("src/recordsync/send/http_policy.py", "src/recordsync/reconcile/batch.py"),
        (
            "tests/send/test_http_policy.py",
            "tests/send/test_http_policy_table.py",
            "tests/reconcile/test_batch.py",
        ),
    ),
    "read-errors": Group(
        (
            "src/recordsync/read/utf8guard.py",
            "src/recordsync/read/swallow.py",
            "src/recordsync/prepare/salvage.py",
        ),
        (
            "tests/read/test_csv.py",
            "tests/read/test_utf8guard.py",
            "tests/read/test_swallow.py",
            "tests/read/test_swallow_split.py",
            "tests/prepare/test_salvage.py",
            "tests/prepare/test_salvage_cells.py",
        ),
    ),
}

def _names(file: str) -> frozenset[str]:
    text = (ROOT / "bench" / file).read_text("utf-8")
    return frozenset(x.strip() for x in text.splitlines() if x.strip() and not x.startswith("#"))


# Survivors that no test can kill: the mutant behaves exactly as the original (one name a
# line; the reasons are in docs/run.md, "Mutation testing").
EQUIVALENT: frozenset[str] = _names("mutation_equivalents.txt")

# Survivors killed by a test mutmut cannot watch (a child process; each checked by hand).
CHILD_KILLED: frozenset[str] = _names("mutation_child_killed.txt")

_KILLED = ("killed", "caught by type check", "timeout")  # a timeout: the tests hang, and fail
_MUTMUT_SECTION = re.compile(r"^\[tool\.mutmut\]\n(?:(?!\[).*\n)*", re.MULTILINE)


def _mutmut_section(group: Group) -> str:
    def toml_list(items: tuple[str, ...]) -> str:
        return "[" + ", ".join(f'"{item}"' for item in items) + "]"

    deselect = tuple(arg for test in group.deselect for arg in ("--deselect", test))
    return (
        "[tool.mutmut]\n"
        'source_paths = ["src/recordsync"]\n'
        f"only_mutate = {toml_list(group.modules)}\n"
        'also_copy = ["pipelines", "configs", "sample_data"]\n'
        f"pytest_add_cli_args_test_selection = {toml_list(group.tests)}\n"
        f"pytest_add_cli_args = {toml_list(deselect)}\n"
    )


def _scratch_copy(group: Group, into: Path) -> None:
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".hypothesis")
            shutil.copytree(source, into / name, ignore=ignore)
        else:
            shutil.copy2(source, into / name)
    pyproject = into / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(_MUTMUT_SECTION.sub(_mutmut_section(group), text), encoding="utf-8")


def _dotted(module: str) -> str:
    return module.removeprefix("src/").removesuffix(".py").replace("/", ".")


def run_group(
    name: str, group: Group, keep: Path | None, show: bool
) -> tuple[dict[str, str], float, str]:
    """Every mutant of the group with its verdict, the group's wall time in seconds and (with
    ``show``) the diffs of the survivors that are not known equivalents. ``keep``: a directory
    to leave the scratch copy in (``keep/<group>``, for ``mutmut show`` there)."""
    with tempfile.TemporaryDirectory(prefix=f"mutation-{name}-") as scratch:
        where = Path(scratch) if keep is None else keep / name
        if keep is not None:
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir(parents=True)
        _scratch_copy(group, where)
        started = time.monotonic()
        mutmut = [sys.executable, "-m", "mutmut"]
        subprocess.run([*mutmut, "run", "--max-children", "1"], cwd=where, check=False)
        elapsed = time.monotonic() - started
        listing = subprocess.run(
            [*mutmut, "results", "--all", "true"],
            cwd=where,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        verdicts = {}
        for line in listing.splitlines():
            mutant, _, status = line.strip().rpartition(": ")
            if mutant:
                verdicts[mutant] = status
        diffs = [
            subprocess.run(
                [*mutmut, "show", mutant], cwd=where, check=False, capture_output=True, text=True
            ).stdout
            for mutant, status in verdicts.items()
            if show and status not in _KILLED and mutant not in EQUIVALENT | CHILD_KILLED
        ]
    return verdicts, elapsed, "".join(diffs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="*", metavar="GROUP", help=", ".join(GROUPS))
    parser.add_argument("--keep", type=Path, help="leave each group's scratch copy in KEEP/GROUP")
    parser.add_argument("--show", action="store_true", help="print each survivor's diff")
    args = parser.parse_args()
    chosen = args.groups or list(GROUPS)
    unknown = [name for name in chosen if name not in GROUPS]
    if unknown:
        parser.error(f"unknown group {', '.join(unknown)}; the groups: {', '.join(GROUPS)}")
    survivors: list[str] = []
    rows: list[str] = []
    for name in chosen:
        group = GROUPS[name]
        verdicts, elapsed, diffs = run_group(name, group, args.keep, args.show)
        if diffs:
            print(diffs, flush=True)
        for module in group.modules:
            dotted = _dotted(module) + "."
            mine = {m: s for m, s in verdicts.items() if m.startswith(dotted)}
            killed = sum(1 for s in mine.values() if s in _KILLED)
            alive = sorted(m for m, s in mine.items() if s not in _KILLED)
            equivalent = [m for m in alive if m in EQUIVALENT]
            in_child = [m for m in alive if m in CHILD_KILLED]
            survivors += [
                f"{m}: {mine[m]}" for m in alive if m not in EQUIVALENT and m not in CHILD_KILLED
            ]
            rows.append(
                f"| {name} | `{module.removeprefix('src/recordsync/')}` | {len(mine)} | {killed} "
                f"| {len(in_child)} | {len(equivalent)} | {elapsed:.0f} s |"
            )
    print("| group | module | mutants | killed | killed in a child | equivalent | group time |")
    print("|---|---|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    for survivor in survivors:
        print("survived:", survivor)
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
