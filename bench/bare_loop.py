"""The bare loop the benchmarks compare recordsync with (run as its own process).

    python bench/bare_loop.py URL API_KEY BODIES

BODIES holds one pre-encoded request body a line (``{"objects": [...]}``, at most 100
entries, written by the benchmark before the clock starts). The loop posts each to
``URL/api/objects/contacts/batch`` from one keep-alive ``httpx.Client``, one after another,
and checks only the status code, like the peers' minimal loop. The bodies are read a line at a
time (from the page cache: microseconds a body), so the loop holds one body at a time.
"""

from __future__ import annotations

import sys

import httpx


def main() -> None:
    url, key, bodies = sys.argv[1], sys.argv[2], sys.argv[3]
    headers = {"x-api-key": key, "content-type": "application/json"}
    with (
        open(bodies, "rb") as lines,
        httpx.Client(base_url=url, headers=headers, timeout=60) as client,
    ):
        for line in lines:
            body = line.rstrip(b"\n")
            client.post("/api/objects/contacts/batch", content=body).raise_for_status()


if __name__ == "__main__":
    main()
