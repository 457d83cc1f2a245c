"""The bare loop the benchmarks compare recordsync with (run as its own process).

    python bench/bare_loop.py URL API_KEY BODIES [TIMING_JSON]

BODIES holds one pre-encoded request body a line (``{"objects": [...]}``, at most 100
entries, written by the benchmark before the clock starts). The loop posts each to
``URL/api/objects/contacts/batch`` from one keep-alive ``httpx.Client``, one after another,
and checks only the status code, like the peers' minimal loop. The bodies are read a line at a
time (from the page cache: microseconds a body), so the loop holds one body at a time.

TIMING_JSON (optional): where to write ``{"requests": n, "seconds": s, "median_ms": m}``,
the loop's own clock from the first request to the last answer (no start-up) and the median
round trip (the first left out when there are more), for the benchmark's check that its
baseline is plausible (``plausible.check_bare``).
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import httpx


def main() -> None:
    url, key, bodies = sys.argv[1], sys.argv[2], sys.argv[3]
    headers = {"x-api-key": key, "content-type": "application/json"}
    trips: list[float] = []
    clock = time.perf_counter
    with (
        open(bodies, "rb") as lines,
        httpx.Client(base_url=url, headers=headers, timeout=60) as client,
    ):
        start = clock()
        for line in lines:
            body = line.rstrip(b"\n")
            sent = clock()
            client.post("/api/objects/contacts/batch", content=body).raise_for_status()
            trips.append(clock() - sent)
        seconds = clock() - start
    if len(sys.argv) > 4:
        steady = trips[1:] or trips  # the first: connection set-up and first use
        median_ms = statistics.median(steady) * 1000 if steady else 0.0
        timing = {"requests": len(trips), "seconds": seconds, "median_ms": median_ms}
        with open(sys.argv[4], "w", encoding="utf-8") as f:
            json.dump(timing, f)


if __name__ == "__main__":
    main()
