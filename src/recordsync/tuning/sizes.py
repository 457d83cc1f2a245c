"""Every size a run trades memory, disk or latency by, in one table.

These are not switches: they bound what a run holds (rows in memory before a temporary file
takes them, rows written to the state store at a time, chunks in flight), so they hold
whoever calls recordsync, a library user included. They change how fast and in how much
memory a run works, never what it does: each module that uses one is tested with it made
tiny (the tests set the attribute here), so the paths past each bound run in the suite.

The figures each was chosen by are measured by the benchmarks in ``bench/`` (memory:
``bench_memory.py``, from 100k to 10M rows; state store: ``bench_state.py``; pacing:
``bench_run.py``), whose current results are in ``bench/README.md``.

Read them as ``sizes.NAME`` at the time of use (never ``from ... import NAME``), so that a
test or a caller that sets one is heard.
"""

from __future__ import annotations

# --- reading and preparing a source ---------------------------------------------------

SLICE_ROWS = 2048
"""Rows mapped and validated at a time when a run sends: a read batch is prepared in slices,
so that the run's main thread returns to its chunks (acknowledging, reporting, queueing the
next) between slices instead of leaving the service waiting for a whole batch. A dry run
prepares whole batches: slices cost about 25% of its speed."""

FIRST_SLICE_ROWS = 256
"""Rows of a step's first read batch prepared on their own, first, when a run sends: the first
chunk goes out once they are mapped and validated, not after a whole slice (or the window of
:data:`MAP_ROWS` it is mapped in, and the batch's digests). The next parts are twice as large
each, up to a slice (``prepare.core.ramp``), each prepared while the chunks of the one before
are in flight. About two chunks of the default size."""

MAP_ROWS = 8192
"""Rows mapped and validated column by column at a time when a run sends (a read batch's
:data:`SLICE_ROWS` slices share them): each Arrow call has a fixed cost, paid once per this
many rows rather than per slice, while the mapped columns held ahead of the slices' rows stay
a few megabytes."""

VALUE_MEMO_MAX = 65_536
"""Distinct values whose check outcome a column remembers across batches."""

DUPLICATE_SPILL_ROWS = 65_536
"""(hash, row identity) pairs a duplicate-key scan holds in memory (the duplicate scan's, the
nightly first pass's match and ledger keys, each merge rule's); past it they go to disk,
partitioned by the hash's top :data:`DUPLICATE_PARTITION_BITS` bits. Sorting the pairs held
costs about five times their 16 bytes a pair at the moment they are grouped or spilled, and a
merge scan holds one set per rule at once: at 262,144 pairs the spills of an unchanged 1M-row
re-run's merge scan made its peak RSS (about 11 MB above this bound's)."""

DUPLICATE_PARTITION_BITS = 6
"""64 partitions: a 10M-row source's duplicate scan sorts about 160k pairs at a time."""

MERGE_SPILL_ROWS = 100_000
"""Rows whose dedup keys (email, domain, LinkedIn URL) the merge scan holds in memory (about
40 bytes a row with three rules); past it they go to a temporary file."""

SEEN_HASH_ROWS = 262_144
"""Ledger-key hashes a step's duplicate check holds in a set when the duplicate scan did not
say which keys rows share (:mod:`recordsync.tuning.seen_hashes`); past it they go to disk,
partitioned as the duplicate scan's pairs (:data:`DUPLICATE_PARTITION_BITS`)."""

SEEN_BLOOM_BITS = 1 << 27
"""The Bloom filter (16 MB) in front of those on disk: about 1% of new keys read the disk at
10M keys sent."""

SEEN_SPILL_ROWS = 250_000
"""Rows of what a nightly run's first pass learnt (digests, matches) held in memory for the
second pass; past it they go to a file."""

MARK_ROWS = 1024
"""Rows of a read batch a batch mark names at a time (:mod:`recordsync.state.batch_marks`):
a row that changed, or is not in the snapshot (invalid, failed last time), makes the rows of
its span digested one by one. A span's mark costs about half a microsecond a column; a span
digested row by row, about 0.4 µs a row (a 1M-row CSV of 13 columns)."""

CLASH_KEYS_KEPT = 10_000
"""Keys of rows not found in the snapshot a nightly run's first pass keeps as strings, so
that the snapshot's keys are checked against them by Arrow (a set look-up in C++) rather
than each hashed in Python: at 1M snapshot rows, 0.3 s saved for a few rows not found.
Arrow builds the set again for each record batch of the snapshot: for a 20,000-row batch,
0.26 ms with 20 keys, 1.3 ms with 20,000, 12.6 ms with 100,000, against 1.8 ms to hash the
batch's keys in Python. Past it, every snapshot key is hashed, as before."""

UNMATCHED_KEEP_ROWS = 100_000
"""Rows not found in the snapshot that the first pass keeps (as Arrow slices) so that the
second pass need not read the source again; above this, it reads the source again."""

# --- the state store --------------------------------------------------------------------

LOOKUP_CHUNK = 1000
"""Keys per ledger query (well under SQLite's variable limit)."""

PREP_ROWS = 500
"""Rows whose ledger entries and references a step looks up at a time."""

CLASSIFY_ROWS = 500
"""Rows classified against the ledger at a time as a step streams: unchanged rows are
settled without being held."""

FOLD_FROM = 20_000
"""Acknowledged rows that wait before the ledger starts being written while a step runs."""

FOLD_SLICE = 500
"""Rows written to the ledger with each acknowledged chunk, once :data:`FOLD_FROM` wait: at a
step's end at most about :data:`FOLD_FROM` are left to write."""

FOLD_ROWS = 100_000
"""Rows acknowledged but not yet in the ledger at which the ledger is written in bulk, should
the slices (:data:`FOLD_SLICE`) not keep up."""

SNAPSHOT_FLUSH_ROWS = 65_536
"""Rows of a step's snapshot (the source rows' digests) hashed and written at a time."""

SNAPSHOT_PENDING_ROWS = 8_192
"""Rows of a step's snapshot held as Python values (about 300 bytes a row) before they are
made an Arrow piece of the next batch of the file (about 80 bytes a row): the rows a run
sends (a nightly run's changed rows) come one chunk at a time."""

SNAPSHOT_MEMORY_ROWS = 250_000
"""Snapshot rows whose digests and sort order a run holds in memory (24 bytes a row); a
larger snapshot's are sorted on disk in 2 ** :data:`DIGEST_PARTITION_BITS` partitions.
Holding them takes more than those 24 bytes: the whole snapshot file's digest columns are
read at once: at 1M rows, an unchanged re-run of a DuckDB source peaked about 60 MB higher
than with the digests sorted on disk, for a CPU time within the noise of same-run pairs."""

DIGEST_SCANS = 32
"""Look-ups of a few digests (64 at most each) in a snapshot of more than
:data:`SNAPSHOT_MEMORY_ROWS` rows made by reading its digests once each, before they are
sorted on disk: rows of a nightly export that are in no snapshot (invalid or failed last
time, new) are looked up this way. A read of 1M rows' digests takes a few milliseconds;
sorting them on disk, about 0.25 s (``state/snapshot_match.py``)."""

DIGEST_PARTITION_BITS = 6
"""64 partitions for a snapshot's digests sorted on disk."""

DIGEST_FIND_ROWS = 1024
"""Digests looked up at a time in a snapshot's digests sorted on disk: each reads the 4 kB
pages its place is on, 12 kB a query at most (12 MB a group)."""

SNAPSHOT_BLOCK_BYTES = 8 << 20
"""Bytes of a snapshot file per row of a PostgreSQL state store's ``snapshot_blocks``."""

CHECKPOINT_EVERY_S = 0.5
"""Seconds between two background checkpoints of a SQLite state store's write-ahead log."""

# --- sending ------------------------------------------------------------------------------

STEP_FLUSH_ROWS = 5_000
"""Prepared rows (valid or not) a step buffers before it writes them to the report (a chunk's
worth of valid rows also flushes): ``results.csv`` follows the source order, memory stays
bounded (a prepared row holds its cells and batch input: a kilobyte or more)."""

STEP_FLUSH_UNCHANGED_ROWS = 65_536
"""Rows found unchanged (in blocks of Arrow arrays, about 100 bytes a row) a step buffers
before it writes them to the report. Counted apart from :data:`STEP_FLUSH_ROWS`, so that a
nightly run's few changed rows still fill whole chunks: counted with them, a 1%-changed run
sent chunks of 50 rows, twice the requests."""

CHUNKS_AHEAD = 3
"""Chunks a step keeps unsettled: the one in flight and two journaled and queued behind it,
so that a slow moment on this side does not leave the service waiting for the next chunk."""

PACE_WAIT_S = 0.05
"""Seconds a step waits at most for the journal write of the chunk in flight before it
prepares the next one."""
