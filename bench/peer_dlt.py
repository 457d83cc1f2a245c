"""dlt as a peer (run in the peers' environment, see peers.py; not part of recordsync).

    python bench/peer_dlt.py URL API_KEY CSV PIPELINES_DIR [raw|modelled]

A ``@dlt.resource`` yields the CSV's rows (``csv.DictReader``; ``modelled``: the name, the
e-mail and the ``fields`` object as JSON text, sent as it is; see peers.py); a
``@dlt.destination(batch_size=100)`` posts each batch of 100 as ``{"objects": [...]}`` to
``URL/api/objects/contacts/batch`` from one keep-alive ``httpx.Client`` and raises on any
status but 200. dlt runs its usual extract, normalise and load steps in PIPELINES_DIR.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator
from typing import Any

import dlt
import httpx
import orjson


def main() -> None:
    url, key, source, pipelines_dir = sys.argv[1:5]
    modelled = sys.argv[5:] == ["modelled"]
    client = httpx.Client(
        base_url=url, headers={"x-api-key": key, "content-type": "application/json"}, timeout=60
    )

    @dlt.resource(name="contacts", write_disposition="append")
    def contacts() -> Iterator[dict[str, Any]]:
        with open(source, newline="", encoding="utf-8") as f:
            if modelled:
                yield from csv.DictReader(f)
                return
            for row in csv.DictReader(f):
                score = row["Score"]
                yield {
                    "name": f"{row['First Name']} {row['Last Name']}",
                    "email": row["Email"],
                    "phone": row["Phone"],
                    "job_title": row["Title"],
                    "lead_score": int(score) if score.isdigit() else None,
                }

    @dlt.destination(batch_size=100, loader_file_format="typed-jsonl")
    def service(items: list[dict[str, Any]], table: Any) -> None:
        objects = [
            {
                "name": item["name"],
                "match_by": "email",
                "match_value": item["email"],
                "fields": orjson.Fragment(item["fields"])
                if modelled
                else {k: item[k] for k in ("email", "phone", "job_title", "lead_score")},
            }
            for item in items
        ]
        body = orjson.dumps({"objects": objects})
        client.post("/api/objects/contacts/batch", content=body).raise_for_status()

    pipeline = dlt.pipeline("bench", destination=service, pipelines_dir=pipelines_dir)
    pipeline.run(contacts())
    client.close()


if __name__ == "__main__":
    main()
