"""How many rows a source holds, roughly: the progress bar's ETA (never the report's counts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def estimate_rows(source: Any, base_dir: Path) -> int | None:
    """Rough row count of a source for the progress bar's ETA (never used in the report)."""
    path = Path(source.path)
    path = path if path.is_absolute() else base_dir / path
    if not path.is_file():
        return None
    try:
        if source.kind == "parquet":
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(path).metadata.num_rows)
        lines = 0
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                lines += block.count(b"\n")
        return max(0, lines - (1 if source.header else 0) - int(source.skip_rows))
    except (OSError, ValueError):
        return None
