"""The floor of a state store in a second process: what the run's own process would still do.

A design that moved the journal, the ledger and the snapshot's keep to a second process
would leave this process to read, map, digest, classify and encode the rows, send them, write
the report, and hand the other process each chunk's rows before it is sent and its outcomes
after. This script builds that process's best case and times it beside the real run:

- it copies ``src/`` to a temporary tree and, there only, reduces the state hook's
  ``begin``, ``clear`` and ``ack`` (:class:`recordsync.nightly.hook.StateHook`) to building
  the rows a state process would be sent (the journal's rows, the chunk's outcomes) and
  pickling them: no statement, no commit, no wait for another process, no snapshot keep;
- it runs ``bench_run.py`` with that tree as ``--baseline-src`` (the side called
  ``baseline`` in its output), interleaved with the real run, ``--no-state`` and the peers
  named, counting what arrived at the server as every ``bench_run.py`` run does.

The other process's own CPU (the statements, the commits) is not counted: on two cores it
would compete with this process and its sender thread, so a real split can only be slower
than this floor. If the floor is not ahead of a peer, no second process can put the run
ahead of it on this machine.

    python bench/split_floor.py --rows 100000 --pairs 5 --servers noop \
        --peers drt-tuned --no-state-too
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

FLOOR = """

# ---- bench/split_floor.py: this tree only, never the product ----
import pickle as _split_pickle  # noqa: E402


def _split_begin(self, plan, chunk_no, rows):  # type: ignore[no-untyped-def]
    sent = columns.journal_rows(rows, self._hash, [True] * len(rows))
    _split_pickle.dumps(sent, 5)


def _split_clear(self, plan, chunk_nos):  # type: ignore[no-untyped-def]
    return None


def _split_ack(self, plan, chunk_no, rows, results):  # type: ignore[no-untyped-def]
    outcomes = columns.chunk_results(rows, results)
    deque(map(self._hash.pop, map(id, rows), repeat(None)), 0)
    _split_pickle.dumps(outcomes, 5)


StateHook.begin = _split_begin  # type: ignore[method-assign]
StateHook.clear = _split_clear  # type: ignore[method-assign]
StateHook.ack = _split_ack  # type: ignore[method-assign]
"""


def floor_tree(root: Path) -> Path:
    """A copy of ``src/`` whose state hook only builds and pickles what it would hand over."""
    tree = root / "src"
    shutil.copytree(HERE.parent / "src", tree, ignore=shutil.ignore_patterns("__pycache__"))
    hook = tree / "recordsync" / "nightly" / "hook.py"
    text = hook.read_text(encoding="utf-8")
    for needed in ("from collections import deque", "from itertools import repeat", "columns"):
        if needed not in text:
            raise SystemExit(f"{hook}: no '{needed}'; update split_floor.py to the hook")
    hook.write_text(text + FLOOR, encoding="utf-8")
    return tree


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="recordsync-split-") as tmp:
        tree = floor_tree(Path(tmp))
        cmd = [sys.executable, str(HERE / "bench_run.py"), *sys.argv[1:]]
        cmd += ["--baseline-src", str(tree)]
        raise SystemExit(subprocess.run(cmd, check=False).returncode)


if __name__ == "__main__":
    main()
