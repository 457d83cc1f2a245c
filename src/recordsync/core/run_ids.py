"""When a run began, read from its id: ``20261122T013000Z-nightly-ab12`` starts with the UTC
second the run's first attempt started (:func:`recordsync.run.runner.new_run_id`). A resumed run
keeps the id of the attempt that died, so its id dates the first attempt, while its
``started_at`` is the resumed attempt's own start."""

from __future__ import annotations

from datetime import UTC, datetime


def first_attempt_started(run_id: object) -> float | None:
    """The epoch second a run's first attempt started, or None when ``run_id`` has no stamp."""
    if not isinstance(run_id, str):
        return None
    try:
        return datetime.strptime(run_id[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None
