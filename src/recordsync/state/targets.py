"""Which service a state belongs to (docs/state.md, "One state, many targets").

A ledger's record ids, its input hashes and its snapshots are facts about one service: a
record id of one organization names another record (or nothing) in another. So everything
the store keeps for a pipeline is kept per **target**:

    target      the normalised base URL (``embedded-sandbox:<absolute db path>`` for the
                embedded sandbox) plus the ids of the users the service lists
    same target same URL, and the user ids overlap (or both lists are empty): a user added
                or removed is the same organization; a URL that now answers with none of the
                users it had is another organization behind the same host (a multi-tenant
                service and another API key), so it is a new target
    state key   ``pipeline + U+001F + target_id``: the ``pipeline`` column of ``scopes`` and
                ``runs``, so the ledger, journal, snapshots, references and mirror bookkeeping
                of one target are never read for another

A run into a target the pipeline's state has never seen is a first run there (it says so in
one line). State written before targets were recorded (*unbound*) names no service: a run
refuses to guess and asks for ``--adopt-state`` (bind it to this run's target) or
``recordsync state reset``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from recordsync.core.errors import ConfigError
from recordsync.state.ledger_rows import utc_now

SEP = "\x1f"
"""Between the pipeline's name and the target id in a state key (never in a name a user
writes: a YAML name or a file stem)."""
EMBEDDED = "embedded-sandbox:"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(name: str) -> str:
    """A target's name as the state compares it: scheme and host in lower case, a default
    port and a trailing slash dropped (a user name, password, query or fragment never kept);
    the embedded sandbox by its database's absolute path."""
    if name.startswith(EMBEDDED):
        return EMBEDDED + str(Path(name[len(EMBEDDED) :]).expanduser().resolve())
    parts = urlsplit(name.strip())
    if not parts.scheme or not parts.hostname:
        return name.strip().rstrip("/")
    scheme = parts.scheme.lower()
    host = parts.hostname.lower()  # without user:password@ (never kept)
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or _DEFAULT_PORTS.get(scheme) == port else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


@dataclass(frozen=True, slots=True)
class TargetIdentity:
    """What the state remembers of a service: its normalised URL and its users' ids."""

    url: str
    users: frozenset[str]

    @classmethod
    def read(cls, name: str, users: Iterable[Mapping[str, Any]]) -> TargetIdentity:
        """From the target's name (:attr:`recordsync.run.target.Target.name`) and the users
        the service listed."""
        ids = frozenset(str(u["id"]) for u in users if isinstance(u, Mapping) and u.get("id"))
        return cls(normalize_url(name), ids)

    def same_organization(self, users: frozenset[str]) -> bool:
        return bool(self.users & users) or (not self.users and not users)


def state_key(pipeline: str, target_id: int | None) -> str:
    """The key the store keeps ``pipeline``'s state under for one target (None: a target the
    state does not know, as a dry run sees it: a key nothing is stored under)."""
    return f"{pipeline}{SEP}{'new' if target_id is None else target_id}"


def pipeline_of(key: str) -> str:
    """The pipeline's own name in a state key (what messages show)."""
    return split_key(key)[0]


def split_key(key: str) -> tuple[str, int | None]:
    """``(pipeline, target_id)`` of a state key; target None for unbound (older) state."""
    name, sep, tid = key.rpartition(SEP)
    if not sep or not (tid.isdigit() or tid == "new"):
        return key, None
    return name, int(tid) if tid.isdigit() else None


@dataclass(frozen=True, slots=True)
class BoundTarget:
    """The run's target as the state knows it."""

    target_id: int | None
    """None: a dry run into a target the state has never seen (nothing is written)."""
    key: str
    """The state key of (pipeline, target)."""
    url: str
    first_run: bool
    """True when the pipeline's state holds nothing for this target yet."""
    others: tuple[str, ...]
    """The URLs of the other targets the pipeline's state knows."""

    def note(self, pipeline: str) -> str | None:
        """The one line (a warning of the run) a first run into a target says when the
        pipeline's state knows other targets (None otherwise: a plain first run)."""
        if not self.first_run or not self.others:
            return None
        known = ", ".join(self.others)
        return (
            f"first run of '{pipeline}' into {self.url}: its state knows records only in"
            f" {known}, so every row is sent here as new (nothing learned there is used)"
        )


@dataclass(frozen=True, slots=True)
class KnownTarget:
    target_id: int
    url: str
    first_seen: str
    last_seen: str


def _find(conn: sqlite3.Connection, identity: TargetIdentity) -> int | None:
    rows = conn.execute(
        "SELECT target_id, users FROM targets WHERE url = ? ORDER BY target_id", (identity.url,)
    ).fetchall()
    for tid, users in rows:
        if identity.same_organization(frozenset(json.loads(users))):
            return int(tid)
    return None


def _keys(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT pipeline FROM scopes UNION SELECT pipeline FROM runs")
    return {str(r[0]) for r in rows}


def keys_of(conn: sqlite3.Connection, pipeline: str) -> dict[int | None, str]:
    """The state keys ``pipeline`` has rows under, by target id (None: unbound state)."""
    out: dict[int | None, str] = {}
    for key in _keys(conn):
        name, tid = split_key(key)
        if name == pipeline and not key.endswith(f"{SEP}new"):
            out[tid] = key
    return out


def known_targets(conn: sqlite3.Connection, pipeline: str | None = None) -> list[KnownTarget]:
    """The targets the state knows (of ``pipeline``'s state only, when given)."""
    wanted = None if pipeline is None else set(keys_of(conn, pipeline))
    rows = conn.execute(
        "SELECT target_id, url, first_seen, last_seen FROM targets ORDER BY target_id"
    ).fetchall()
    return [
        KnownTarget(int(r[0]), str(r[1]), str(r[2]), str(r[3]))
        for r in rows
        if wanted is None or int(r[0]) in wanted
    ]


def unbound_refusal(pipeline: str, url: str, state_db: object) -> ConfigError:
    return ConfigError(
        f"the state of pipeline '{pipeline}' in {state_db} was written before recordsync"
        " recorded which service a state belongs to, so it cannot tell whether its record ids"
        f" are {url}'s; nothing was sent",
        hint=f"if that state was made by runs into {url}, run again with --adopt-state (it"
        f" binds the state to {url}); if not, `recordsync state reset {pipeline}` forgets it",
    )


def bind(
    conn: sqlite3.Connection,
    pipeline: str,
    identity: TargetIdentity,
    *,
    write: bool,
    adopt: bool = False,
    state_db: object = "",
    postgres: bool = False,
) -> BoundTarget:
    """Find (``write``: record, or create) the run's target and the pipeline's state key
    for it. Unbound state of the pipeline is refused (ConfigError) unless ``adopt`` binds it
    to this target. ``write=False`` (a dry run) changes nothing."""
    tid = _find(conn, identity)
    keys = keys_of(conn, pipeline)
    unbound = keys.get(None)
    if unbound is not None and not adopt and write:
        raise unbound_refusal(pipeline, identity.url, state_db)
    if write:
        now = utc_now()
        users = json.dumps(sorted(identity.users))
        if tid is None:
            sql = "INSERT INTO targets (url, users, first_seen, last_seen) VALUES (?, ?, ?, ?)"
            args = (identity.url, users, now, now)
            if postgres:
                tid = int(conn.execute(f"{sql} RETURNING target_id", args).fetchone()[0])
            else:
                tid = int(conn.execute(sql, args).lastrowid or 0)
        else:
            conn.execute(
                "UPDATE targets SET users = ?, last_seen = ? WHERE target_id = ?",
                (users, now, tid),
            )
    key = state_key(pipeline, tid)
    if unbound is not None and adopt and write:
        if key in keys.values():
            raise ConfigError(
                f"--adopt-state: pipeline '{pipeline}' already has state for {identity.url};"
                " the older, unbound state cannot be merged into it",
                hint=f"`recordsync state reset {pipeline} --unbound` forgets the unbound state",
            )
        conn.execute("UPDATE scopes SET pipeline = ? WHERE pipeline = ?", (key, unbound))
        conn.execute("UPDATE runs SET pipeline = ? WHERE pipeline = ?", (key, unbound))
        keys = keys_of(conn, pipeline)
    urls = {t.target_id: t.url for t in known_targets(conn)}
    others = tuple(urls[t] for t in keys if t is not None and t != tid and t in urls)
    return BoundTarget(tid, key, identity.url, key not in keys.values(), others)
