"""Where a source file is, as reports and messages show it."""

from __future__ import annotations

import os
import re
from pathlib import Path

from recordsync.core.errors import SourceError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")


def is_remote(path: str) -> bool:
    """True for a URI of a filesystem other than the local one (``s3://bucket/key``,
    ``gs://...``, ``memory://...``); ``file://`` and plain paths are local."""
    found = _SCHEME.match(path)
    return found is not None and found.group(1).lower() != "file"


def locate(base_dir: Path, path: str) -> Path | str:
    """A remote URI as it is (:mod:`.remote` opens it), else :func:`source_path`."""
    if is_remote(path):
        return path
    if path.lower().startswith("file://"):
        path = path[len("file://") :]
    return source_path(base_dir, path)


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


_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian)", "utf-32"),
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)", "utf-32"),
    (b"\xff\xfe", "UTF-16 (little-endian)", "utf-16"),
    (b"\xfe\xff", "UTF-16 (big-endian)", "utf-16"),
)


def check_source_file(path: Path, encoding: str) -> None:
    """Refuse, with a :class:`SourceError` naming the file and the option to set, what the
    CSV reader would hang on or crash on: a FIFO, socket or device (reading one blocks
    forever), and a UTF-16/UTF-32 file read with a byte-oriented encoding (a byte-order mark,
    or NUL bytes in at least a quarter of the first 4 KiB: every other byte of text)."""
    import codecs
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # a missing file is reported by the reader
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "not a regular file"
        raise SourceError(
            f"source {path} is {kind}: recordsync reads files it can open twice (it checks the"
            " header first), not streams",
            key="source.path",
            hint="write the export to a regular file and point source.path at it",
        )
    if stat.S_ISDIR(mode):
        return
    try:
        wide = codecs.lookup(encoding).name.startswith(("utf-16", "utf-32"))
    except LookupError:
        return  # the reader names the unknown encoding
    if wide:
        return
    with open(path, "rb") as f:
        head = f.read(4096)
    found = next(((name, enc) for bom, name, enc in _WIDE_BOMS if head.startswith(bom)), None)
    if found is None and head and head.count(0) * 4 >= len(head):
        found = ("UTF-16 or UTF-32 (NUL bytes between the characters)", "utf-16")
    if found is not None:
        raise SourceError(
            f"{path} looks like {found[0]} text, but source.encoding is {encoding!r}",
            key="source.encoding",
            hint=f"set `encoding: {found[1]}` under `source:` in the mapping, or re-export the"
            " file as UTF-8",
        )
