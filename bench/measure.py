"""Whole-process measurements of one child: wall time, exit code, peak RSS, CPU.

The child is started by a fresh, tiny launcher (``python -S``, a few MB) that waits for that
single child with ``os.wait4`` and writes the child's own ``rusage``. Not from the benchmark's
own process, on purpose: on Linux a child's ``ru_maxrss`` includes the peak of the memory it
replaced at ``exec`` (the parent's, when spawned with ``vfork``), so a child spawned by a
benchmark holding hundreds of MB would report at least that. The launcher holds almost
nothing, so the figure is the child's. The wall time runs from the spawn to the reaping;
both instants are kept too (``time.monotonic``: one clock for every process of the machine,
so a server's own timestamps can be set against them, see timeline.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

LAUNCH = """import os, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
t = time.monotonic()
pid = os.posix_spawn(cmd[0], cmd, os.environ)
_, status, ru = os.wait4(pid, 0)
end = time.monotonic()
with open(out, "w") as f:
    f.write(f"{end - t} {os.waitstatus_to_exitcode(status)} {ru.ru_maxrss}"
            f" {ru.ru_utime + ru.ru_stime} {t} {end}")
"""


@dataclass(frozen=True)
class Measured:
    wall: float  # seconds, spawn to exit
    code: int  # exit code (negative: killed by that signal)
    peak_mb: float  # peak RSS of the child (ru_maxrss)
    cpu: float  # user + system seconds of the child
    stderr: str
    started: float = 0.0  # time.monotonic() at the spawn
    ended: float = 0.0  # time.monotonic() at the reaping


def measure(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Measured:
    """Run ``cmd`` (its first element an absolute executable path) through the launcher,
    in ``cwd`` (default: this process's)."""
    with tempfile.TemporaryDirectory(prefix="recordsync-measure-") as tmp:
        out, err = Path(tmp) / "out", Path(tmp) / "err"
        with open(err, "w") as stderr:
            subprocess.run(
                [sys.executable, "-S", "-c", LAUNCH, str(out), *cmd],
                env=os.environ.copy() if env is None else env,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                cwd=cwd,
                check=True,
            )
        wall, code, maxrss_kb, cpu, started, ended = out.read_text().split()
        return Measured(
            float(wall),
            int(code),
            int(maxrss_kb) / 1024,
            float(cpu),
            err.read_text(),
            float(started),
            float(ended),
        )


def vm_hwm_mb() -> float:
    """This process's own peak RSS (VmHWM). Not ``ru_maxrss``: on Linux that includes the
    peak of whatever process exec'd this one (a benchmark holding the generated data)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")
