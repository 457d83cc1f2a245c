"""Where a source file is, as reports and messages show it."""

from __future__ import annotations

import os
from pathlib import Path


def source_path(base_dir: Path, path: str) -> Path:
    """``path`` resolved against ``base_dir`` (the mapping file's directory) and normalised:
    relative to the current directory when below it (``sample_data/deals.parquet``, not
    ``configs/../sample_data/deals.parquet``), else absolute."""
    full = os.path.abspath(os.path.normpath(base_dir / path))
    cwd = os.getcwd()
    try:
        inside = os.path.commonpath([full, cwd]) == cwd
    except ValueError:  # different drives (Windows)
        inside = False
    return Path(os.path.relpath(full, cwd)) if inside and full != cwd else Path(full)
