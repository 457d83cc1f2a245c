"""The benchmark script still runs (tiny sizes; no timing assertions here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_sandbox.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_sandbox", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_runs_and_half_of_each_batch_matches(tmp_path: Path) -> None:
    bench = _load()
    fill, rate, cpu_us, totals = bench.run_size(2000, 3, tmp_path)
    assert fill >= 0 and rate > 0 and cpu_us > 0
    assert totals == {"created": 150, "updated": 150, "failed": 0}
