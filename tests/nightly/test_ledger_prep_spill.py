"""Ledger keys already seen in the step (recordsync.nightly.ledger_prep.StepPrep) are found the
same way once they went to disk (the seen keys' set lowered to 2 keys, its filter to 8 bits)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recordsync.config import load_mapping
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.nightly.ledger_prep import StepPrep
from recordsync.tuning import sizes


def outcomes(tmp_path: Path) -> list[tuple[str | None, str, str | None]]:
    (tmp_path / "d.yaml").write_text(
        "object_type: companies\nsource: {path: d.csv}\nname: Ext\nmatch_by: [name]\n"
        "merges: expected\nledger_key: {column: Ext}\n"
    )
    config = load_mapping(tmp_path / "d.yaml")
    prep = StepPrep(None, "p", "d", config, {"d": config})  # type: ignore[arg-type]
    out: list[tuple[str | None, str, str | None]] = []
    keys = ["a", "b", "c", "a", "d", "e", "b", "f", "g", "a", "", "h"]
    for start in range(0, len(keys), 3):
        group = [row(n + 2, k) for n, k in enumerate(keys[start : start + 3], start)]
        prep.apply(group)
        out += [(r.key, r.status.value, r.error) for r in group]
    return out


def row(n: int, key: str) -> PreparedRow:
    values: dict[str, Any] = {"Ext": key}
    return PreparedRow(SourceRow("d.csv", n, values), RowStatus.VALID, {"name": key}, key="k")


def test_ledger_keys_seen_on_disk_are_duplicates_as_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_memory = outcomes(tmp_path)
    monkeypatch.setattr(sizes, "SEEN_HASH_ROWS", 2)
    monkeypatch.setattr(sizes, "SEEN_BLOOM_BITS", 8)
    assert outcomes(tmp_path) == in_memory
    dups = [(k, e) for k, s, e in in_memory if s == RowStatus.DUPLICATE.value]
    assert len(dups) == 3
    assert dups[0][1] is not None and "'a' (column 'Ext'): row 2 has" in dups[0][1]
