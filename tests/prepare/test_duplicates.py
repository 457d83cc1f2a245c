"""Duplicate keys: the first pass groups rows by key hash, the second finds a row's group by
the row's identity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from recordsync.config import load_mapping
from recordsync.core.model import RowStatus
from recordsync.prepare import ROW_BITS, Duplicates, prepare_step
from recordsync.prepare.dups import HashRuns, shared_hashes
from recordsync.tuning import sizes


def rid(fidx: int, row: int) -> int:
    return (fidx << ROW_BITS) | row


def test_groups_of_finds_each_grouped_identity_and_only_those() -> None:
    a, b = [rid(0, 2), rid(0, 9), rid(1, 3)], [rid(0, 5), rid(1, 7)]
    dups = Duplicates({111: a, -222: b}, ["x.csv", "y.csv"])
    ids = np.array([rid(0, 1), rid(0, 2), rid(0, 5), rid(0, 9), rid(1, 3), rid(1, 9)])
    assert list(dups.groups_of(ids)) == [(1, a), (2, b), (3, a), (4, a)]
    assert list(dups.groups_of(np.array([rid(1, 7), rid(2, 7)], dtype=np.int64))) == [(0, b)]
    assert list(dups.groups_of(np.zeros(0, dtype=np.int64))) == []
    assert list(Duplicates({}).groups_of(ids)) == []
    assert dups.where(rid(1, 3), 0) == "row 3 of y.csv" and dups.where(rid(0, 9), 0) == "row 9"


@pytest.mark.parametrize("fmt", ["csv", "parquet"])  # Parquet: batches of 3 rows
@pytest.mark.parametrize("policy", ["first", "last", "fail"])
def test_duplicates_across_batches_and_rules(tmp_path: Path, policy: str, fmt: str) -> None:
    names = [f"N{i % 35}" for i in range(40)]
    # every 10th e-mail repeats; rows 30-39 have no e-mail: their key is the name
    emails = [f"e{i % 10}@x.example" if i < 30 else "" for i in range(40)]
    if fmt == "csv":
        lines = ["Name,Email", *(f"{n},{e}" for n, e in zip(names, emails, strict=True))]
        (tmp_path / "c.csv").write_text("\n".join(lines) + "\n")
        first = 2
    else:
        pq.write_table(pa.table({"Name": names, "Email": emails}), tmp_path / "c.parquet")
        first = 1
    (tmp_path / "c.yaml").write_text(
        f"object_type: contacts\nsource: {{path: c.{fmt}, batch_size: 3}}\nname: Name\n"
        f"match_by: [email, name]\nduplicates: {policy}\nfields:\n  email: Email\n"
    )
    rows = list(
        prepare_step(load_mapping(tmp_path / "c.yaml"), base_dir=tmp_path, schema=None, users=None)
    )
    assert [r.source.source_row for r in rows] == list(range(first, first + 40))
    by_key: dict[str, list[int]] = {}
    for r in rows:
        assert r.key is not None
        by_key.setdefault(r.key, []).append(r.source.source_row)
    assert by_key["name:N31"] == [first + 31]
    assert by_key["email:e3@x.example"] == [first + 3, first + 13, first + 23]
    for r in rows:
        same = by_key[r.key or ""]
        others = [n for n in same if n != r.source.source_row]
        if policy == "fail":
            want = RowStatus.DUPLICATE if others else RowStatus.VALID
            if others:
                listed = ", ".join(f"row {n}" for n in others)
                assert r.error == f"duplicate key {r.key}: also on {listed} (duplicates: fail)"
        else:
            keep = same[-1] if policy == "last" else same[0]
            want = RowStatus.DUPLICATE if keep != r.source.source_row else RowStatus.VALID
            if want is RowStatus.DUPLICATE:
                assert r.error == (
                    f"duplicate key {r.key}: row {keep} has the same key and wins "
                    f"(duplicates: {policy})"
                )
        assert r.status is want, r


def test_match_key_and_ledger_key_groups_that_overlap_are_one_group() -> None:
    match = {1: [rid(0, 2), rid(0, 5)], 2: [rid(0, 8), rid(0, 9)]}
    ledger = {3: [rid(0, 5), rid(0, 7)]}
    dups = Duplicates.combined(match, ledger, ["c.csv"])
    groups = sorted(dups.groups.values())
    assert groups == [[rid(0, 2), rid(0, 5), rid(0, 7)], [rid(0, 8), rid(0, 9)]]
    joined = next(g for g in dups.groups.values() if rid(0, 7) in g)
    assert dups.by_ledger_key(joined)
    assert not dups.by_ledger_key(next(g for g in dups.groups.values() if rid(0, 9) in g))
    assert dups.losers("first") == {rid(0, 5), rid(0, 7), rid(0, 9)}
    assert dups.losers("last") == {rid(0, 2), rid(0, 5), rid(0, 8)}
    assert len(dups.losers("fail")) == 5


@pytest.mark.parametrize("policy", ["first", "last", "fail"])
def test_a_first_digested_run_finds_the_same_duplicates(tmp_path: Path, policy: str) -> None:
    """With no snapshot yet (a first run), the digested path's scan hashes the match keys as
    prepare_step's does, without making the key strings: the same rows, statuses and errors,
    across batches and rules."""
    from recordsync.prepare.digests import prepare_digested

    names = [f"N{i % 35}" for i in range(40)]
    emails = [f"e{i % 10}@x.example" if i < 30 else "" for i in range(40)]
    lines = ["Name,Email", *(f"{n},{e}" for n, e in zip(names, emails, strict=True))]
    (tmp_path / "c.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "c.yaml").write_text(
        "object_type: contacts\nsource: {path: c.csv, batch_size: 3}\nname: Name\n"
        f"match_by: [email, name]\nduplicates: {policy}\nfields:\n  email: Email\n"
    )
    mapping = load_mapping(tmp_path / "c.yaml")
    plain = list(prepare_step(mapping, base_dir=tmp_path, schema=None, users=None))
    digested = list(
        prepare_digested(
            mapping, base_dir=tmp_path, schema=None, users=None, snapshot=None, fp=b"fp"
        )
    )

    def seen(rows: list[Any]) -> list[tuple[int, str, str | None, str | None]]:
        return [(r.source.source_row, r.status.value, r.key, r.error) for r in rows]

    assert seen(digested) == seen(plain)
    assert sum(r.status is RowStatus.DUPLICATE for r in plain) >= 10


def test_hash_runs_spilled_to_partitions_give_the_same_groups_in_the_same_order() -> None:
    """Pairs past the limit go to partition files by their hash's top bits; the groups come
    back as from all the pairs at once, hash order included (extreme hashes too)."""
    rng = np.random.default_rng(3)
    hashes: list[npt.NDArray[np.int64]] = []
    ids: list[npt.NDArray[np.int64]] = []
    runs = HashRuns(limit=20)  # 13 pairs an add: some are still in memory at the end
    for start in range(0, 400, 13):
        h = rng.integers(-(2**63), 2**63 - 1, 13, dtype=np.int64)
        h[rng.random(13) < 0.4] = rng.choice(np.array([-(2**63), 2**63 - 1, 0, -1, 5 << 58]))
        i = np.arange(start, start + 13, dtype=np.int64)
        hashes.append(h)
        ids.append(i)
        runs.add(h, i)
    assert runs.spilled
    want = shared_hashes(hashes, ids)
    assert len(want) >= 5
    assert list(runs.shared().items()) == list(want.items())
    assert not runs.spilled  # the partition files are gone


@pytest.mark.parametrize("policy", ["first", "last", "fail"])
def test_duplicate_scans_spilled_to_disk_give_the_same_rows(
    tmp_path: Path, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scans of prepare_step (match keys and ledger keys) and of a first digested run,
    with the pairs held in memory lowered to 4: the same rows, statuses and errors."""
    from recordsync.prepare.digests import prepare_digested

    names = [f"N{i % 35}" for i in range(40)]
    emails = [f"e{i % 10}@x.example" if i < 30 else "" for i in range(40)]
    ext = [f"X{i % 17}" for i in range(40)]
    lines = "".join(f"{n},{e},{x}\n" for n, e, x in zip(names, emails, ext, strict=True))
    (tmp_path / "c.csv").write_text("Name,Email,Ext\n" + lines)
    (tmp_path / "c.yaml").write_text(
        "object_type: contacts\nsource: {path: c.csv, batch_size: 3}\nname: Name\n"
        f"match_by: [email, name]\nduplicates: {policy}\nfields:\n  email: Email\n"
    )
    (tmp_path / "l.yaml").write_text(
        (tmp_path / "c.yaml").read_text() + "ledger_key: {column: Ext}\n"
    )

    def seen(rows: Any) -> list[tuple[int, str, str | None, str | None]]:
        return [(r.source.source_row, r.status.value, r.key, r.error) for r in rows]

    def outcomes() -> list[list[tuple[int, str, str | None, str | None]]]:
        out = []
        for name in ("c.yaml", "l.yaml"):
            mapping = load_mapping(tmp_path / name)
            out.append(seen(prepare_step(mapping, base_dir=tmp_path, schema=None, users=None)))
        for name in ("c.yaml", "l.yaml"):  # a nightly first run: its first pass's scan
            mapping = load_mapping(tmp_path / name)
            before = len(made)
            digested = prepare_digested(
                mapping, base_dir=tmp_path, schema=None, users=None, snapshot=None, fp=b"fp"
            )
            out.append(seen(digested))
            digest_spills.append(len(made) - before)
        return out

    made: list[HashRuns] = []
    digest_spills: list[int] = []
    in_memory = outcomes()
    monkeypatch.setattr(sizes, "DUPLICATE_SPILL_ROWS", 4)
    monkeypatch.setattr(HashRuns, "_spill", _counting(HashRuns._spill, made))
    assert outcomes() == in_memory
    assert len(made) >= 3  # every scan went to disk
    # the first pass's match keys, and with a ledger key its ledger keys too
    assert digest_spills[2:] == [1, 2]
    # the nightly first pass finds the duplicates prepare_step finds, ledger keys included
    assert [r[:2] for r in in_memory[2]] == [r[:2] for r in in_memory[0]]
    assert [r[:2] for r in in_memory[3]] == [r[:2] for r in in_memory[1]]
    assert sum(r[1] == RowStatus.DUPLICATE.value for r in in_memory[1]) > sum(
        r[1] == RowStatus.DUPLICATE.value for r in in_memory[0]
    )  # the ledger key groups more rows


def _counting(spill: Any, made: list[HashRuns]) -> Any:
    def counted(self: HashRuns) -> None:
        if self not in made:
            made.append(self)
        spill(self)

    return counted
