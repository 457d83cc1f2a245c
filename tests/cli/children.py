"""Python run in a child process on the tree under test (the command line's start-up changes a
process for good: each case needs a fresh one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import recordsync

SRC = str(Path(recordsync.__file__).resolve().parents[1])  # the tree under test, not an install


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment with :data:`SRC` first on ``PYTHONPATH``, and ``extra``."""
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join([SRC, *filter(None, [env.get("PYTHONPATH")])])
    return env


def child_json(
    script: str, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Any:
    """``python -c script args...`` in a child; what it printed, read as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=child_env() if env is None else env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
        timeout=600,
    )
    return json.loads(done.stdout)
