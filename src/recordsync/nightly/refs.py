"""Cross-object references: fill a relationship field from another mapping's ledger.

A deals mapping whose ``company_id`` column holds a company domain resolves it through the
companies mapping's ledger (keyed by domain) to the company's record id::

    companies = ReferenceResolver(store, "nightly", "companies", normalize=domain_key,
                                  column="company_id")
    companies.prefetch(domains_of_this_chunk)          # optional: one bulk lookup per chunk
    payload["fields"]["company_id"] = companies.resolve("https://www.Acme.com/")

``normalize`` must be the function the referenced mapping uses to build its source keys,
so that ``Acme.com`` here finds the key ``acme.com`` stored there. A missing reference (no
ledger entry, no record id yet, or a mirror-deleted record) raises :class:`RowError` naming
the referenced mapping and key (``on_missing="fail"``), or resolves to ``None`` (``"unset"``)
so the field is left out. Blank values (``None``, ``""``) are no reference: ``None``.
Results are cached for the run; the referenced step must run first in the pipeline.

With an ``index`` (:class:`recordsync.nightly.ref_index.RefIndex`, ``ref.by``), the value is
compared with a field or column of the referenced step's rows instead of its ledger key: the
rows that have it give ledger keys, and those whose ledger entry is usable (or planned) are
the candidates. One candidate: its record id. None: missing, as above. Several distinct keys:
ambiguous, a :class:`RowError` whatever ``on_missing`` says (the field is never guessed).

:attr:`ReferenceResolver.counts` counts each resolved value's outcome: ``set``, ``no_value``
(blank), ``not_found``, ``ambiguous``.

The ledger looked up is any :class:`Ledger`: the :class:`StateStore`, or, in a dry run, a
:class:`RunLedger`: the store's ledger (if any) plus the rows the dry run's earlier steps
found valid, as ``planned`` (the real run would send them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Literal, Protocol

from recordsync.core.errors import RowError
from recordsync.nightly.ref_index import RefIndex
from recordsync.nightly.ref_lookup import ServiceLookup
from recordsync.state.store import DELETED, Entry
from recordsync.state.targets import pipeline_of

OnMissing = Literal["fail", "unset"]
Normalizer = Callable[[str], str | None]
PLANNED = "planned"
"""A dry run's entry for a row an earlier step would send: a reference to it resolves,
to no id yet (the dry run sends nothing, so the field is left out of the unsent input)."""


class Ledger(Protocol):
    """Where references are looked up: :class:`StateStore` or :class:`RunLedger`."""

    def lookup_many(
        self, pipeline: str, mapping: str, keys: Iterable[str]
    ) -> Mapping[str, Entry]: ...


REF_OUTCOMES = ("set", "no_value", "not_found", "ambiguous", "from_service")
"""``from_service``: of the ``set`` ones, those found by ``lookup: service``."""


def usable(entry: Entry | None) -> bool:
    """The entry gives a record id a reference can use."""
    return entry is not None and entry.record_id is not None and entry.last_status != DELETED


def _live(entry: Entry) -> bool:
    """A usable entry, or a row a dry run's earlier step would send."""
    return usable(entry) or entry.last_status == PLANNED


class RunLedger:
    """A dry run's ledger: the rows it planned (keyed like the ledger) over an optional
    ``base`` ledger (the state store) whose usable entries win (the real run finds them)."""

    def __init__(self, base: Ledger | None = None) -> None:
        self.base = base
        self._entries: dict[str, dict[str, Entry]] = {}

    def plan(self, mapping: str, keys: Iterable[str]) -> None:
        """Rows a dry run found valid: the real run would send (and create) them."""
        known = self._entries.setdefault(mapping, {})
        for key in keys:
            if key not in known:
                known[key] = Entry(key, None, None, PLANNED, None, "")

    def lookup_many(self, pipeline: str, mapping: str, keys: Iterable[str]) -> Mapping[str, Entry]:
        wanted = list(keys)
        base = dict(self.base.lookup_many(pipeline, mapping, wanted)) if self.base else {}
        mine = self._entries.get(mapping, {})
        for key in wanted:
            entry = mine.get(key)
            if entry is not None and not usable(base.get(key)):
                base[key] = entry
        return base


class ReferenceResolver:
    """Resolves source keys of ``mapping`` to record ids from its ledger, with a run cache."""

    def __init__(
        self,
        store: Ledger,
        pipeline: str,
        mapping: str,
        *,
        on_missing: OnMissing = "fail",
        normalize: Normalizer | None = None,
        column: str | None = None,
        index: RefIndex | None = None,
        service: ServiceLookup | None = None,
    ) -> None:
        if on_missing not in ("fail", "unset"):
            raise ValueError(f"on_missing must be 'fail' or 'unset', not {on_missing!r}")
        self.store = store
        self.pipeline = pipeline
        self.mapping = mapping
        self.on_missing = on_missing
        self.normalize = normalize
        self.column = column
        self.index = index
        self.service = service
        self.counts: Counter[str] = Counter(dict.fromkeys(REF_OUTCOMES, 0))
        self._cache: dict[str, Entry | None] = {}

    def key_for(self, value: object) -> str | None:
        """The referenced mapping's source key for ``value`` (None for a blank value)."""
        if value is None:
            return None
        text = str(value).strip()
        if not text:
            return None
        if self.index is not None:
            return self.index.normalize(text)
        return self.normalize(text) if self.normalize is not None else text

    def _ledger_keys(self, key: str) -> list[str]:
        return self.index.keys_for(key) if self.index is not None else [key]

    def prefetch(self, values: Iterable[object]) -> None:
        """Look up every not-yet-cached value in one bulk query."""
        given = {k for v in values if (k := self.key_for(v)) is not None}
        wanted = {lk for k in given for lk in self._ledger_keys(k)}
        wanted.difference_update(self._cache)
        if not wanted:
            return
        found = self.store.lookup_many(self.pipeline, self.mapping, wanted)
        for key in wanted:
            self._cache[key] = found.get(key)

    def _entry(self, key: str) -> Entry | None:
        if key not in self._cache:
            self._cache[key] = self.store.lookup_many(self.pipeline, self.mapping, (key,)).get(key)
        return self._cache[key]

    def resolve(self, value: object) -> int | None:
        """The record id ``value`` refers to; see the module docstring for missing values."""
        key = self.key_for(value)
        if key is None:
            self.counts["no_value"] += 1
            return None
        if self.index is not None:
            return self._resolve_by(value, key)
        entry = self._entry(key)
        if entry is not None and _live(entry):
            self.counts["set"] += 1
            return entry.record_id if usable(entry) else None
        return self._missing(value, self._missing_message(key, entry))

    def _resolve_by(self, value: object, norm: str) -> int | None:
        assert self.index is not None
        keys = self.index.keys_for(norm)
        entries = [(k, self._entry(k)) for k in keys]
        live = [(k, e) for k, e in entries if e is not None and _live(e)]
        if len(live) == 1:
            self.counts["set"] += 1
            found = live[0][1]
            return found.record_id if usable(found) else None
        where = f"{self.column}: " if self.column else ""
        what = f"{where}{self.index.label} = {str(value).strip()!r}"
        if len(live) > 1:
            self.counts["ambiguous"] += 1
            shown = ", ".join(repr(k) for k, _ in live[:3]) + (", ..." if len(live) > 3 else "")
            raise RowError(
                f"{what} fits {len(live)} rows of step '{self.mapping}' with different keys"
                f" ({shown}): the reference is ambiguous and was not set",
                column=self.column,
                value=value,
                rule="reference",
                hint=f"refer by a value that is unique among the '{self.mapping}' rows (e.g. its"
                " ledger key), or make the rows' values unique",
            )
        if not entries:
            run = f"{what} fits no row of step '{self.mapping}'"
        else:
            key, entry = entries[0]
            detail = self._missing_message(key, entry).removeprefix(where)
            run = f"{what} fits a row of step '{self.mapping}', but {detail}"
        if self.service is not None:
            return self._from_service(value, norm, run)
        return self._missing(value, run)

    def _from_service(self, value: object, norm: str, run: str) -> int | None:
        """``lookup: service``: the value fits no usable row of this run; the service's
        records (:mod:`recordsync.nightly.ref_lookup`) decide."""
        assert self.service is not None
        text = " ".join(str(value).split())
        probe = norm if self.index is not None and self.index.ref.match == "domain" else text
        found = self.service.find(probe, norm)
        if found.problem is not None:
            self.counts["not_found"] += 1
            raise RowError(
                f"{run}; and {found.problem}",
                column=self.column,
                value=value,
                rule="reference",
                hint="refer to a row of this run's source, or narrow the value",
            )
        if len(found.ids) == 1:
            self.counts["set"] += 1
            self.counts["from_service"] += 1
            return found.ids[0]
        if found.ids:
            self.counts["ambiguous"] += 1
            more = ", ..." if len(found.ids) > 3 else ""
            shown = ", ".join(f"#{i}" for i in found.ids[:3]) + more
            raise RowError(
                f"{run}, but {len(found.ids)} records in the service ({shown}):"
                " the reference is ambiguous and was not set",
                column=self.column,
                value=value,
                rule="reference",
                hint="refer by a value that is unique among those records",
            )
        return self._missing(value, f"{run}, nor any record in the service")

    def _missing(self, value: object, message: str) -> int | None:
        """None (``on_missing: unset``), else a RowError with ``message``."""
        self.counts["not_found"] += 1
        if self.on_missing == "unset":
            return None
        hint = self._hint()
        raise RowError(message, column=self.column, value=value, rule="reference", hint=hint)

    def _missing_message(self, key: str, entry: Entry | None) -> str:
        where = f"{self.column}: " if self.column else ""
        base = f"{where}no '{self.mapping}' record with key {key!r} in the ledger of pipeline"
        base += f" '{pipeline_of(self.pipeline)}'"
        if entry is None:
            return base + " (that key was never synced)"
        if entry.last_status == DELETED:
            return base + " (that record was deleted by mirror deletes)"
        return base + f" (its last send was {entry.last_status})"

    def _hint(self) -> str:
        return (
            f"make sure the referenced row is in the '{self.mapping}' source and that its step"
            " runs before this one; or set on_missing: unset to leave the field empty"
        )

    def clear(self) -> None:
        """Forget the cache (the referenced ledger changed during the run)."""
        self._cache.clear()
