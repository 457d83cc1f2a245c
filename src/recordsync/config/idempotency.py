"""Is a mapping idempotent? What finds a row's record again on the next run (docs/mapping.md,
"Match keys: what makes a run repeatable").

    key                                        survives a lost state store   repeatable
    match_by id / email / name                 yes                           yes
    contacts with fields.email, companies      yes (the service dedups)      yes
      with fields.domain, no match_by
    ledger_key + match_by_ledger_id only       no: the ledger is the key     while the state lasts
    nothing (e.g. a custom object, no          -                             no: every run creates
      match_by, no ledger key)                                               every row again

A mapping with no key at all is warned about loudly in every run and dry run (stderr,
report.md, summary.json ``warnings``); ``require_key: true`` makes it (and a ledger-only key)
a configuration error. A ledger-only mapping whose ledger is empty while the target already
holds records of its type (the state store was lost, or never belonged to this target) is
refused before anything is sent unless ``--allow-recreate`` is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from recordsync.config.models import MappingConfig
from recordsync.core.errors import ConfigError

_DEDUP = {"contacts": "email", "contact": "email", "companies": "domain", "company": "domain"}


def service_key(mapping: MappingConfig) -> str | None:
    """What lets the service find a row's record again without recordsync's state, or None."""
    if mapping.match_by:
        return "match_by " + ", ".join(rule.by for rule in mapping.match_by)
    field = _DEDUP.get(mapping.object_type)
    if field is not None and field in mapping.fields:
        return f"the service's {field} deduplication"
    return None


def ledger_keyed(mapping: MappingConfig) -> bool:
    """True when the state store's ledger finds the records (a declared ``ledger_key``
    and ``match_by_ledger_id``)."""
    return mapping.ledger_key is not None and mapping.match_by_ledger_id


def check_require_key(mapping: MappingConfig, line: int | None) -> None:
    """``require_key: true`` with no key that survives a lost state store: ConfigError."""
    if not mapping.require_key or service_key(mapping) is not None:
        return
    also = " (a ledger_key alone lives only in the state store)" if ledger_keyed(mapping) else ""
    raise ConfigError(
        f"require_key is true, but {mapping.object_type} rows have no key the service can match"
        f" on{also}: every run without the state store would create every row again",
        file=mapping.label,
        line=line,
        key="require_key",
        hint="add match_by (id with a record-id column, or name when names are unique), or"
        " remove require_key",
    )


def idempotency_warnings(steps: Iterable[tuple[str, MappingConfig]], *, state: bool) -> list[str]:
    """One warning per step whose rows are created again by every run."""
    out = []
    for name, mapping in steps:
        if service_key(mapping) is not None or (state and ledger_keyed(mapping)):
            continue
        why = "the run has no state store (--no-state)" if ledger_keyed(mapping) else "no key"
        out.append(
            f"step '{name}' ({mapping.label}): {why}: every run creates a new"
            f" {mapping.object_type} record for every row (no match_by; the service does not"
            " deduplicate this type). Add match_by, or ledger_key + match_by_ledger_id for a"
            " nightly sync with its state store; require_key: true makes this an error"
        )
    return out


def refuse_recreate(
    steps: Iterable[tuple[str, MappingConfig]],
    ledger_counts: Mapping[str, Mapping[str, int]],
    has_records: Callable[[str], bool],
    *,
    pipeline: str,
    state_db: Any,
) -> str | None:
    """The message that refuses a run whose ledger-only step would create every row again
    (its ledger is empty and the target holds records of its type), or None."""
    for name, mapping in steps:
        if service_key(mapping) is not None or not ledger_keyed(mapping):
            continue
        if sum(ledger_counts.get(name, {}).values()) or not has_records(mapping.object_type):
            continue
        return (
            f"step '{name}' ({mapping.label}) finds its {mapping.object_type} records only"
            f" through the state store's ledger (ledger_key + match_by_ledger_id, no match_by),"
            f" and the ledger of pipeline '{pipeline}' in {state_db} has no entry for it, while"
            f" the target already holds {mapping.object_type} records: the state store was lost"
            " or belongs to another target, and this run would create every row again"
        )
    return None
