"""A step's fingerprint: what its batch inputs depend on besides the source cells (the
config, the live schema, the users, the owners file), so that rows recognised by their cells
(:mod:`recordsync.prepare.digests`) are only trusted while it is unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recordsync.core.version import __version__
from recordsync.state.digests import fingerprint


def step_fingerprint(
    config: Any,
    base_dir: Path,
    schema_json: list[dict[str, Any]] | None,
    users: list[dict[str, Any]] | None,
) -> bytes | None:
    """What a step's batch inputs depend on besides the source cells
    (:func:`recordsync.state.digests.fingerprint`); None when rows cannot be recognised
    from their cells alone: ``ref`` fields take record ids from another step's ledger."""
    if schema_json is None or any(spec.ref is not None for spec in config.fields.values()):
        return None
    owner = config.owner
    owners_file = base_dir / owner.owners_file if owner is not None and owner.owners_file else None
    return fingerprint(  # users always: user-id fields are checked against them too
        f"{__version__}\n{config.inputs_json()}", {"schema": schema_json}, users, owners_file
    )
