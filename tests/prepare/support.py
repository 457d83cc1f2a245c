"""A contacts export in Parquet read in batches of 4, and the snapshot a first run leaves of
it: the nightly path's tests start from both."""

from __future__ import annotations

from collections.abc import Callable, Container
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from recordsync.config import load_mapping
from recordsync.config.models import MappingConfig
from recordsync.core.model import PreparedRow
from recordsync.prepare.digests import prepare_digested
from recordsync.state import StateStore
from recordsync.state.snapshots import Snapshot, SnapshotWriter

Row = tuple[str, str, str]


def contacts(tmp_path: Path) -> tuple[MappingConfig, Callable[[list[Row]], None]]:
    """The mapping of ``c.parquet`` (name, e-mail, title; matched by e-mail, in batches of 4)
    and a function that writes the file's rows."""

    def write(rows: list[Row]) -> None:
        names, emails, titles = (list(c) for c in zip(*rows, strict=True))
        table = pa.table({"Name": names, "Email": emails, "Title": titles})
        pq.write_table(table, tmp_path / "c.parquet")

    (tmp_path / "c.yaml").write_text(
        "object_type: contacts\nsource: {path: c.parquet, batch_size: 4}\nname: Name\n"
        "match_by: [email]\nfields:\n  email: Email\n  job_title: Title\n"
    )
    return load_mapping(tmp_path / "c.yaml"), write


def nightly_pass(
    mapping: MappingConfig, base_dir: Path, snapshot: Snapshot | None, **options: Any
) -> Any:
    """:func:`prepare_digested` of ``mapping`` against ``snapshot`` (no schema, no users,
    fingerprint ``b"fp"``), with ``options`` (``marks``, ``slice_rows``...)."""
    return prepare_digested(
        mapping,
        base_dir=base_dir,
        schema=None,
        users=None,
        snapshot=snapshot,
        fp=b"fp",
        **options,
    )


def first_snapshot(
    store: StateStore, mapping: MappingConfig, base_dir: Path, failed: Container[int] = ()
) -> SnapshotWriter:
    """The snapshot a first run of ``mapping`` leaves (every row created, record ids from 100;
    the rows at ``failed`` not kept, as if they failed), registered; its writer, marks and
    all."""
    writer = SnapshotWriter(store, "p", "contacts", "r1")
    for i, r in enumerate(nightly_pass(mapping, base_dir, None, marks=writer.marks)):
        assert isinstance(r, PreparedRow) and r.digest is not None and r.key is not None
        if i not in failed:
            writer.add(r.digest, r.key, r.match_by, r.match_value, 100 + i)
    writer.commit(b"fp")
    return writer
