"""References by any field: the referenced step's rows indexed by one of their values.

``ref: {mapping: companies, by: name}`` compares a contact's ``Company`` cell with the
``name`` each row of the companies step maps to; ``by: {column: Company Name}`` (or
``by: "column:Company Name"``) with a source column of those rows. The index is built from
the referenced step's source when the referring step starts (so it holds every row of this
run's export, changed or not), and maps each normalised value to the ledger keys of the rows
that have it; the record ids then come from the ledger (:mod:`recordsync.nightly.refs`).

Values are compared after a normalisation (``ref.normalize``):

- ``fold`` (the default): trimmed, runs of whitespace made one space, case-folded
  (``"  ACME   Ltd "`` = ``"acme ltd"``); nothing else (``Acme Ltd`` ≠ ``Acme Ltd.``);
- ``domain`` (the default for ``by: domain``): a URL or e-mail reduced to its host
  (``https://www.Acme.com/about`` = ``acme.com``), as ``ledger_key.normalize: domain``;
- ``exact``: trimmed only.

A row without a ledger key (blank key columns) cannot be referred to and is not indexed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from recordsync.config.models import MappingConfig, RefSpec
from recordsync.map.engine import BatchMapper
from recordsync.map.fields import extract
from recordsync.read import iter_source
from recordsync.state.keys import NORMALIZERS, cell_text, domain_key
from recordsync.validate.refs_check import by_spec

Normalizer = Callable[[str], str | None]


def _fold(text: str) -> str | None:
    return " ".join(text.split()).casefold() or None


def _exact(text: str) -> str | None:
    return text.strip() or None


MATCHERS: dict[str, Normalizer] = {"fold": _fold, "domain": domain_key, "exact": _exact}


class RefIndex:
    """Normalised value → the distinct ledger keys of the referenced rows that have it."""

    def __init__(self, ref: RefSpec, target: MappingConfig, base_dir: Path) -> None:
        self.ref = ref
        self.target = target
        self.base_dir = base_dir
        self.normalize = MATCHERS[ref.match]
        self.spec = by_spec(ref, target)
        self._keys: dict[str, str | list[str]] | None = None

    @property
    def label(self) -> str:
        assert self.ref.by is not None
        return self.ref.by.label

    def keys_for(self, norm: str) -> list[str]:
        """The ledger keys of the referenced rows whose value normalises to ``norm``."""
        if self._keys is None:
            self._keys = self._build()
        got = self._keys.get(norm)
        if got is None:
            return []
        return [got] if isinstance(got, str) else got

    def _build(self) -> dict[str, str | list[str]]:
        t = self.target
        mapper = (
            BatchMapper(t, base_dir=self.base_dir, schema=None, users=None) if t.match_by else None
        )
        index: dict[str, str | list[str]] = {}
        columns = list(dict.fromkeys(t.source_columns() + self.spec.columns))
        for sb in iter_source(t.source, self.base_dir, columns):
            batch = sb.batch
            values = extract(self.spec, batch).values.to_pylist()
            keys = self._row_keys(batch, mapper)
            for value, key in zip(values, keys, strict=True):
                text = cell_text(value)
                norm = self.normalize(text) if text is not None and key is not None else None
                if norm is None or key is None:
                    continue
                have = index.get(norm)
                if have is None:
                    index[norm] = key
                elif isinstance(have, str):
                    if have != key:
                        index[norm] = [have, key]
                elif key not in have:
                    have.append(key)
        return index

    def _row_keys(self, batch: Any, mapper: Any) -> list[str | None]:
        """Each row's ledger key, as the referenced step computes it (its declared
        ``ledger_key``, else, or when that cell is blank, its match key)."""
        t = self.target
        n = batch.num_rows
        keys: list[str | None] = mapper.keys_only(batch) if mapper is not None else [None] * n
        if t.ledger_key is not None:
            norm = NORMALIZERS[t.ledger_key.normalize]
            cells = batch.column(t.ledger_key.column).to_pylist()
            for i, cell in enumerate(cells):
                text = cell_text(cell)
                declared = norm(text) if text is not None else None
                if declared is not None:
                    keys[i] = declared
        return keys
