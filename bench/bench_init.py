"""Score ``recordsync init``'s column → field inference on the corpus of exports.

    python bench/bench_init.py

Loads the default seed's schema and users from a sandbox served on loopback, infers a
mapping for every export of two corpora and prints, for each, the share of mappable columns
mapped right with no edit, the misses, columns mapped to a field their values cannot fit
(target: none) and columns mapped where none was expected. Target: >= 90% right, no wrong
type, on each corpus:

- made up: tests/data/init_corpus/ (15 files in the styles of HubSpot, Salesforce,
  Mailchimp, Pipedrive, Zoho, Google and Outlook contacts, snake_case, UPPERCASE, European
  numbers and dates, a typed Parquet file), written alongside init's synonyms;
- real: tests/data/init_corpus/real/ (20 public exports nobody here wrote: demo databases,
  open-data registers; see tests/data/init_corpus/PROVENANCE.md).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> int:
    import httpx

    from recordsync.core.secret import Secret
    from recordsync.infer.corpus import score_corpus, score_real_corpus
    from recordsync.sandbox import create_app
    from recordsync.sandbox.server import run_in_thread
    from recordsync.send.client import RecordServiceClient, make_http_client

    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(Path(tmp) / "s.db", api_key="sk_live_bench_init")
        try:
            with run_in_thread(app) as url, make_http_client(httpx.Timeout(10.0)) as http:
                client = RecordServiceClient(http, url, Secret("sk_live_bench_init"))
                schema, users = client.schema(), client.users()
        finally:
            app.state.store.close()
    corpus = ROOT / "tests" / "data" / "init_corpus"
    ok = True
    for label, scorer, where in (
        ("made-up corpus", score_corpus, corpus),
        ("real corpus", score_real_corpus, corpus / "real"),
    ):
        start = time.process_time()
        score = scorer(where, schema, users)
        cpu = time.process_time() - start
        for kind, items in (
            ("miss", score.misses),
            ("WRONG TYPE", score.wrong_type),
            ("false positive", score.false_positives),
        ):
            for item in items:
                print(f"  {kind}: {item}")
        met = score.share >= 0.9 and not score.wrong_type
        ok = ok and met
        print(
            f"{label}: {score.right}/{score.mappable} mappable columns right with no edit"
            f" ({score.share:.1%}; target >= 90%), {len(score.wrong_type)} wrong type (target 0),"
            f" {len(score.false_positives)} false positives; {cpu:.2f} s CPU"
            f" -> {'met' if met else 'NOT met'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
