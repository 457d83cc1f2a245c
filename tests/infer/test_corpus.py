"""The corpus scores of ``recordsync init``: >= 90% of mappable columns right, no wrong type,
on the made-up corpus and, apart, on public exports nobody here wrote."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.support import loopback_client, served

from recordsync.infer.corpus import score_corpus, score_real_corpus

CORPUS = Path(__file__).resolve().parents[1] / "data" / "init_corpus"


def test_init_maps_the_corpus_right_and_never_to_a_field_of_the_wrong_type(
    tmp_path: Path,
) -> None:
    with served(tmp_path / "s.db") as url, loopback_client(url) as client:
        schema, users = client.schema(), client.users()
    score = score_corpus(CORPUS, schema, users)
    assert score.mappable >= 100  # 15 exports; at least 10 are required
    assert score.wrong_type == []
    assert score.false_positives == []
    assert score.share >= 0.9, score.misses
    real = score_real_corpus(CORPUS / "real", schema, users)
    assert len(list((CORPUS / "real").glob("*.expect.yaml"))) >= 20
    assert real.mappable >= 70
    assert real.wrong_type == []
    assert real.share >= 0.9, real.misses
    assert len(real.false_positives) <= 2, real.false_positives  # ids nobody could tell apart
