"""The ledger-key check of StepPrep (recordsync.nightly.ledger_prep) decides as the reference
(every key sent remembered in a Python set, each row's values a dict): told which keys two
rows may share (the duplicate scan's ``ledger_shared``), and not told, its seen keys on disk
(the sizes made tiny: the Bloom filter lets most keys through to the partitions' files). The
same rows duplicate, with the same reasons, and the same keys; the cells are read from the
rows' batches by column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.config import load_mapping
from recordsync.config.models import MappingConfig
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.nightly.ledger_prep import StepPrep
from recordsync.prepare import prepare_step
from recordsync.prepare.dups import ledger_keys, shared_hashes, text_hashes
from recordsync.read.batch import BatchValues
from recordsync.tuning import sizes

KEY = st.sampled_from(["a", "A", "b", " b", "c", "", None, "d", "e", "f"])


def mapping(tmp: Path, normalize: str) -> MappingConfig:
    (tmp / "d.yaml").write_text(
        "object_type: companies\nsource: {path: d.csv}\nname: Ext\nmatch_by: [name]\n"
        f"ledger_key: {{column: Ext, normalize: {normalize}}}\n",
        encoding="utf-8",
    )
    return load_mapping(tmp / "d.yaml")


def rows_of(batch: pa.RecordBatch, valid: list[bool], lazy: bool) -> list[PreparedRow]:
    """The batch's rows; ``lazy``: their values read from the batch (as prepare makes them),
    else each with its dict."""
    lines = np.arange(2, 2 + batch.num_rows, dtype=np.int64)
    origin = BatchValues(batch, lines)
    ext = batch.column("Ext").to_pylist()
    out = []
    for i, line in enumerate(lines.tolist()):
        source = (
            SourceRow("d.csv", line, None, origin)
            if lazy
            else SourceRow("d.csv", line, {"Ext": ext[i], "Name": f"n{i}"})
        )
        status = RowStatus.VALID if valid[i] else RowStatus.INVALID
        out.append(PreparedRow(source, status, {"name": f"n{i}"}, key=f"name:n{i}"))
    return out


def decide(
    config: MappingConfig, rows: list[PreparedRow], shared: frozenset[int] | None, group: int
) -> list[tuple[str | None, str, str | None]]:
    prep = StepPrep(None, "p", "d", config, {"d": config}, ledger_shared=shared)  # type: ignore[arg-type]
    for at in range(0, len(rows), group):
        prep.apply(rows[at : at + group])
    return [(r.key, r.status.value, r.error) for r in rows]


@settings(max_examples=60, deadline=None)
@given(
    cells=st.lists(st.tuples(KEY, st.booleans()), max_size=40),
    group=st.integers(1, 7),
    block=st.sampled_from([2, 3, 5]),
    normalize=st.sampled_from(["none", "lower"]),
)
def test_shared_keys_decide_as_every_key_remembered(
    tmp_path_factory: Any,
    cells: list[tuple[str | None, bool]],
    group: int,
    block: int,
    normalize: str,
) -> None:
    config = mapping(tmp_path_factory.mktemp("m"), normalize)
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array([c[0] for c in cells], pa.string()),
            pa.array([f"n{i}" for i in range(len(cells))]),
        ],
        names=["Ext", "Name"],
    )
    valid = [c[1] for c in cells]
    # the first pass's ledger-key groups (prepare.dups), as the duplicate scan makes them
    h, has = text_hashes(ledger_keys(config, batch))
    lines = np.arange(2, 2 + len(cells), dtype=np.int64)
    shared = frozenset(shared_hashes([h], [lines[has]]))
    want = decide(config, rows_of(batch, valid, lazy=False), None, group)  # all in memory
    assert decide(config, rows_of(batch, valid, lazy=True), shared, group) == want
    old = sizes.SEEN_HASH_ROWS, sizes.SEEN_BLOOM_BITS, sizes.DUPLICATE_PARTITION_BITS
    sizes.SEEN_HASH_ROWS, sizes.SEEN_BLOOM_BITS, sizes.DUPLICATE_PARTITION_BITS = block, 16, 2
    try:
        assert decide(config, rows_of(batch, valid, lazy=True), None, group) == want
    finally:
        sizes.SEEN_HASH_ROWS, sizes.SEEN_BLOOM_BITS, sizes.DUPLICATE_PARTITION_BITS = old


def test_rows_come_with_the_ledger_keys_they_share(tmp_path: Path) -> None:
    """prepare_step's stream says which ledger keys its rows share (its duplicate scan's);
    the hook hands them to StepPrep. With the rows of a real source: a row the scan left
    VALID whose key another VALID row has is still found (none here: the scan decided)."""
    config = mapping(tmp_path, "lower")
    (tmp_path / "d.csv").write_text("Ext,Name\nx,a\nX,b\ny,c\n,d\nz,e\nz,f\n", encoding="utf-8")
    blocks = prepare_step(config, base_dir=tmp_path, schema=None, users=None)
    assert blocks.ledger_shared == frozenset({hash("x"), hash("z")})
    rows = list(blocks)
    before = [(r.status.value, r.error) for r in rows]
    prep = StepPrep(None, "p", "d", config, {"d": config}, ledger_shared=blocks.ledger_shared)  # type: ignore[arg-type]
    prep.apply(rows)
    assert [(r.status.value, r.error) for r in rows] == before  # the scan's duplicates stand
    keys = [r.key for r in rows]
    assert keys[:3] == ["x", "x", "y"] and keys[4:] == ["z", "z"]
    assert [r.status for r in rows].count(RowStatus.DUPLICATE) == 2
