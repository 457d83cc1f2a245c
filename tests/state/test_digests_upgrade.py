"""Upgrading the digest format (v1, SipHash through pandas, to v2, XXH3): a snapshot the old
version left is never taken, the first run after the upgrade decides every row on the full
path, and it sends nothing for the rows that did not change (the ledger's input hashes still
find them unchanged); the run after it takes the fast path again."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from tests.e2e.support import REPO, served, target

import recordsync.prepare.digests as prepare_digests
import recordsync.state.digests as digests
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy
from recordsync.state import StateStore

V1_TAG = b"recordsync-source-digest-v1\n"


def _v1_row_digests(
    batch: pa.RecordBatch, columns: list[str], fp: bytes
) -> tuple[np.ndarray, np.ndarray] | None:
    """row_digests as version 1 wrote them (two keyed SipHashes, pandas.util.hash_array)."""
    import pyarrow.compute as pc
    from pandas.util import hash_array

    n = batch.num_rows
    texts, ok = [], np.ones(n, dtype=bool)
    for name in columns:
        text = digests.as_text(batch.column(name))
        if text is None:
            return None
        ok &= ~pc.fill_null(pc.match_substring(text, "\x1f"), False).to_numpy(False)
        texts.append(pc.fill_null(text, "\x00"))
    if any(pa.types.is_large_string(t.type) for t in texts):
        texts = [t.cast(pa.large_string()) for t in texts]
    objs = pc.binary_join_element_wise(*texts, pa.scalar("\x1f", texts[0].type))
    values = objs.to_numpy(zero_copy_only=False)
    out = np.empty((n, 2), dtype=np.uint64)
    for i, key in enumerate(("recordsync:dg:a1", "recordsync:dg:b2")):
        out[:, i] = hash_array(values, encoding="utf8", hash_key=key, categorize=False)
    out ^= digests.salt(fp, batch.schema)
    return out, ok


def _run(pipeline: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """One run of the nightly pipeline, and how many contacts rows it mapped."""
    mapped = 0
    real = prepare_digests._blocks_of

    def counting(sb: Any, *args: Any) -> Any:
        nonlocal mapped
        blocks = list(real(sb, *args))
        mapped += sum(map(len, blocks)) if Path(sb.file).name == "contacts.csv" else 0
        return iter(blocks)

    monkeypatch.setattr(prepare_digests, "_blocks_of", counting)
    request = RunRequest(
        pipeline,
        report_dir=work / "reports",
        state_db=work / "state" / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
        list_unchanged=True,  # every row's line, the unchanged ones too
    )
    with served(work / "sandbox.db") as url:
        result = run_pipeline(request, target=target(url))
    monkeypatch.setattr(prepare_digests, "_blocks_of", real)
    return result, mapped


def _fingerprints(work: Path) -> dict[str, bytes]:
    store = StateStore(work / "state" / "state.db")
    try:
        rows = store._conn.execute(
            "SELECT s.mapping, n.fingerprint FROM snapshots n JOIN scopes s USING (scope_id)"
        ).fetchall()
    finally:
        store.close()
    return {str(m): bytes(fp) for m, fp in rows}


def _statuses(run: Any) -> dict[tuple[str, str], tuple[str, str]]:
    with open(run.report_dir / "results.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {(r["step"], r["source_row"]): (r["status"], r["record_id"]) for r in rows}


def test_a_snapshot_of_the_old_format_is_dropped_and_nothing_is_sent_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    for d in ("pipelines", "configs", "sample_data"):
        shutil.copytree(REPO / d, project / d)
    pipeline, work = project / "pipelines" / "nightly.yaml", tmp_path / "work"

    with monkeypatch.context() as old:  # the version before the upgrade
        old.setattr(digests, "FORMAT_TAG", V1_TAG)
        old.setattr(prepare_digests, "row_digests", _v1_row_digests)
        run1, _ = _run(pipeline, work, monkeypatch)
    assert run1.summary["accounting_ok"]
    v1 = _fingerprints(work)
    assert "contacts" in v1

    run2, mapped2 = _run(pipeline, work, monkeypatch)
    contacts = run2.summary["steps"][1]
    assert mapped2 == contacts["rows_read"]  # the full path: every row mapped
    assert run2.summary["totals"]["rows_sent"] == run2.summary["totals"]["not_sent"] == 0
    before = _statuses(run1)
    for where, (status, record_id) in _statuses(run2).items():
        if before[where][0] in ("created", "updated"):
            assert (status, record_id) == ("unchanged", before[where][1])
        else:
            assert status == before[where][0]
    v2 = _fingerprints(work)
    assert v2.keys() == v1.keys() and all(v2[m] != v1[m] for m in v1)  # the tag names v2

    run3, mapped3 = _run(pipeline, work, monkeypatch)  # the fast path is back
    assert run3.summary["totals"]["rows_sent"] == 0
    c1 = run1.summary["steps"][1]
    assert mapped3 == c1["rows_read"] - c1["created"] - c1["updated"] < contacts["rows_read"]
