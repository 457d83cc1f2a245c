"""Sources on object storage: ``s3://``, ``gs://``, ``hdfs://`` through pyarrow's own
filesystems, any other scheme through fsspec (``pip install 'recordsync[s3]'`` brings it; a
scheme's own package, e.g. gcsfs or adlfs, comes on top). Credentials come from the
environment, as each filesystem reads them (for S3: ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT_URL`` for an S3-compatible server,
or the AWS config files); never from the mapping. Globs are matched as local ones are.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pyarrow as pa

from recordsync.core.errors import SourceError

if TYPE_CHECKING:  # imported where used: a local source never needs pyarrow's filesystems
    import pyarrow.fs as pafs

_GLOB = "*?["


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem of ``uri`` and the path within it (a glob stays in the path)."""
    import pyarrow.fs as pafs

    cut = min((i for i in (uri.find(c) for c in _GLOB) if i >= 0), default=-1)
    head = uri if cut < 0 else uri[:cut]
    try:
        fs, path = pafs.FileSystem.from_uri(head)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        if "scheme" not in str(exc).lower() and "unrecognized" not in str(exc).lower():
            raise _error(uri, exc) from None
        fs, path = _fsspec(uri, head)
    except (OSError, pa.ArrowException) as exc:
        raise _error(uri, exc) from None
    if cut >= 0:
        # from_uri drops a trailing slash: put the pattern back after the same prefix
        path = path + ("/" if head.endswith("/") else "") + uri[cut:]
    return fs, path


def _fsspec(uri: str, head: str) -> tuple[pafs.FileSystem, str]:
    import pyarrow.fs as pafs

    try:
        import fsspec
    except ImportError:
        raise SourceError(
            f"no filesystem for {uri}: pyarrow does not know its scheme and fsspec is not"
            " installed",
            key="source.path",
            hint="pip install 'recordsync[s3]' (fsspec), plus the fsspec package of that"
            " storage (e.g. gcsfs, adlfs)",
        ) from None
    try:
        fs, path = fsspec.core.url_to_fs(head)
    except (ImportError, ValueError, OSError) as exc:
        raise _error(uri, exc) from None
    return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), str(path)


def _error(uri: str, exc: Exception) -> SourceError:
    return SourceError(
        f"cannot open {uri}: {exc}",
        key="source.path",
        hint="check the URI and the storage's credentials in the environment (for S3:"
        " AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL)",
    )


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a local glob reads it: ``*`` and ``?`` stop at ``/``, ``**/`` spans any
    number of directories, ``[...]`` is a character class."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _scheme_prefix(uri: str) -> str:
    return uri.split("://", 1)[0] + "://"


def open_stream(uri: str) -> pa.NativeFile:
    """An input stream of the file ``uri``, decompressed by extension (``.gz``...)."""
    import pyarrow.fs as pafs

    fs, path = filesystem(uri)
    try:
        info = fs.get_file_info(path)
        if info.type != pafs.FileType.File:
            raise SourceError(
                f"source file not found: {uri}",
                key="source.path",
                hint="check source.path (a URI names the bucket and the whole key)",
            )
        return fs.open_input_stream(path, compression="detect")
    except (OSError, pa.ArrowException) as exc:
        raise _error(uri, exc) from None


def open_file(uri: str) -> pa.NativeFile:
    """A random-access file (what Parquet needs) of ``uri``."""
    fs, path = filesystem(uri)
    try:
        return fs.open_input_file(path)
    except (OSError, pa.ArrowException) as exc:
        raise _error(uri, exc) from None


def list_files(uri: str, suffix: str) -> list[str] | None:
    """For a directory or glob URI: the URIs of its files (for a directory those ending in
    ``suffix``, at any depth), sorted; None when ``uri`` is one file."""
    import pyarrow.fs as pafs

    fs, path = filesystem(uri)
    prefix = _scheme_prefix(uri)
    try:
        cut = min((i for i in (path.find(c) for c in _GLOB) if i >= 0), default=-1)
        if cut < 0:
            info = fs.get_file_info(path)
            if info.type == pafs.FileType.File:
                return None
            if info.type == pafs.FileType.NotFound:
                raise SourceError(
                    f"source not found: {uri}",
                    key="source.path",
                    hint="check the bucket and key (or prefix) of source.path",
                )
            base, pattern = path.rstrip("/"), None
        else:
            base, pattern = path[: path.rfind("/", 0, cut)], glob_regex(path)
        found = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
    except (OSError, pa.ArrowException) as exc:
        raise _error(uri, exc) from None
    files = sorted(
        f.path
        for f in found
        if f.type == pafs.FileType.File
        and (pattern.match(f.path) is not None if pattern else f.path.endswith(suffix))
    )
    return [prefix + f for f in files]


def stat_files(uris: list[str]) -> list[tuple[int, int | None] | None]:
    """``(size, modification time in ns or None)`` of each file URI, None for one that is
    not there, as the storage reports them (S3: the object's size and Last-Modified; pyarrow
    exposes no ETag). One filesystem, the first URI's, answers for all (a source's files
    share it)."""
    if not uris:  # before the import: a local source never needs pyarrow's filesystems
        return []
    import pyarrow.fs as pafs

    fs, first = filesystem(uris[0])
    cut = len(uris[0]) - len(first) if uris[0].endswith(first) else None
    paths = [u[cut:] if cut is not None else filesystem(u)[1] for u in uris]
    try:
        infos = fs.get_file_info(paths)
    except (OSError, pa.ArrowException) as exc:
        raise _error(uris[0], exc) from None
    return [
        (int(i.size or 0), i.mtime_ns) if i.type == pafs.FileType.File else None for i in infos
    ]


def read_range(uri: str, start: int, size: int) -> bytes:
    """``size`` bytes of the file ``uri`` from byte ``start`` (fewer at its end)."""
    fs, path = filesystem(uri)
    try:
        with fs.open_input_file(path) as f:
            return bytes(f.read_at(size, start))
    except (OSError, pa.ArrowException) as exc:
        raise _error(uri, exc) from None
