"""Map a batch of source rows to batch inputs, column by column.

Per pyarrow batch: extract and transform each spec (``map.fields``), check values against
the field type (``validate.values``), resolve owners (``resolve.owners``), compute match keys;
only then build one Python dict per row.
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import is_not
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.config.models import FieldSpec, MappingConfig, MatchRule
from recordsync.map.columns import Column, MappedBatch, label_of, match_keys, nul_errors
from recordsync.map.fields import extract, separators_for
from recordsync.map.rows import MappedColumns
from recordsync.resolve.owners import OwnerResolver
from recordsync.validate.config_check import check_mapping
from recordsync.validate.distinct import Memo, Outcome, map_distinct
from recordsync.validate.schema import (
    BUILTIN_SINGULAR,
    SYSTEM_FIELDS,
    FieldDef,
    ObjectType,
    Schema,
)
from recordsync.validate.values import check_array, kind_of

DEFAULT_LIST_SEP = ","


class BatchMapper:
    """Maps batches of one mapping; built once per step (schema checks happen here)."""

    def __init__(
        self,
        mapping: MappingConfig,
        *,
        base_dir: Path,
        schema: Schema | None,
        users: list[dict[str, Any]] | None,
    ) -> None:
        self.mapping = mapping
        self.otype: ObjectType | None = check_mapping(mapping, schema) if schema else None
        self.user_ids = (
            frozenset(str(u["id"]) for u in users if u.get("id") is not None)
            if users is not None
            else None
        )
        self.columns_used = mapping.source_columns()
        self._memos: dict[str, Memo] = {}  # per target key: outcome per distinct cell
        self.owner = (
            OwnerResolver(mapping.owner, users, base_dir) if mapping.owner is not None else None
        )

    def _memo(self, key: str) -> Memo:
        return self._memos.setdefault(key, {})

    def _fdef(self, key: str) -> FieldDef | None:
        return self.otype.field(key) if self.otype is not None else None

    def _kind(self, key: str, spec: FieldSpec, fdef: FieldDef | None) -> str:
        """Field type to check against; offline, system fields (email, ...) are still known."""
        if key == "profile_image_url":
            return "url"
        if key == "name":
            return "text"
        if fdef is None and self.otype is None:
            slug = BUILTIN_SINGULAR.get(self.mapping.object_type, self.mapping.object_type)
            system = SYSTEM_FIELDS.get(slug, {}).get(key)
            if system is not None and system != "user":
                return system
        return kind_of(spec, fdef)

    def column(self, key: str, spec: FieldSpec, batch: pa.RecordBatch) -> Column:
        """One output value per row."""
        fdef = self._fdef(key) if key not in ("name", "profile_image_url") else None
        kind = self._kind(key, spec, fdef)
        multi = bool(fdef and fdef.allow_multiple) or spec.split is not None
        ex = extract(spec, batch, list_sep=(spec.split or DEFAULT_LIST_SEP) if multi else None)
        n = batch.num_rows
        label = label_of(key, spec)
        if multi:
            col = self._multi_column(key, label, spec, fdef, kind, ex.values, ex.explicit_null)
        else:
            read = separators_for(spec, batch)
            chk = check_array(ex.values, kind, fdef, read, self.user_ids, self._memo(key))
            present = pc.is_valid(ex.values).to_numpy(zero_copy_only=False) | ex.explicit_null
            col = Column(key, label, chk.values, present, chk.reasons, chk.hints)
            if chk.reasons is not None:
                col.shown = ex.values
        if key == "name" or (fdef is not None and fdef.required):
            missing = ~pc.is_valid(ex.values).to_numpy(zero_copy_only=False)
            if key != "name" and fdef is not None and fdef.default_value is not None:
                missing &= ex.explicit_null  # left out, it gets the default on create
            if missing.any():
                reasons: list[str | None] = (
                    list(col.reasons) if col.reasons is not None else [None] * n
                )
                for i in np.flatnonzero(missing).tolist():
                    reasons[i] = "is required, but the value is empty"
                col.reasons = reasons
        return col.put_first(ex.reasons, ex.shown)

    def _multi_column(
        self,
        key: str,
        label: str,
        spec: FieldSpec,
        fdef: FieldDef | None,
        kind: str,
        strings: pa.Array,
        explicit_null: npt.NDArray[np.bool_],
    ) -> Column:
        """Lists (multi-select, multi-relationship): split and check once per distinct cell."""
        sep = spec.split or DEFAULT_LIST_SEP
        user_ids = self.user_ids

        def one(cell: str) -> Outcome:
            parts = [p.strip() for p in cell.split(sep)]
            parts = [p for p in parts if p]
            if not parts:
                return [], None, None
            chk = check_array(pa.array(parts, pa.string()), kind, fdef, spec, user_ids)
            if chk.reasons is not None:
                for j, reason in enumerate(chk.reasons):
                    if reason is not None:
                        hint = chk.hints[j] if chk.hints is not None else None
                        return None, f"{parts[j]!r} {reason}", hint
            return chk.values, None, None

        values, reasons, hints = map_distinct(strings, one, self._memo(key))
        values = [v[:] if v is not None else None for v in values]  # no shared lists
        present = pc.is_valid(strings).to_numpy(zero_copy_only=False) | explicit_null
        return Column(key, label, values, present, reasons, hints)

    def _rule_values(
        self, rule: MatchRule, batch: pa.RecordBatch, cols: dict[str, list[Any]] | None
    ) -> list[Any]:
        """A match rule's value per row (``cols``: the mapped name/email values, if any)."""
        m = self.mapping
        if rule.column is not None:
            kind = {"id": "relationship", "email": "email", "name": "text"}[rule.by]
            spec = FieldSpec(column=rule.column)
            return check_array(extract(spec, batch).values, kind, None, spec, None).values
        if rule.by == "email":
            return (
                cols["email"]
                if cols is not None
                else self._values("email", m.fields["email"], batch)
            )
        return cols["name"] if cols is not None else self._values("name", m.name, batch)

    def _key_columns(
        self, batch: pa.RecordBatch, cols: dict[str, list[Any]]
    ) -> list[tuple[str, list[Any]]]:
        return [(rule.by, self._rule_values(rule, batch, cols)) for rule in self.mapping.match_by]

    def _values(self, key: str, spec: FieldSpec, batch: pa.RecordBatch) -> list[Any]:
        """``column(key, spec, batch).values`` without the per-row error bookkeeping."""
        fdef = self._fdef(key) if key not in ("name", "profile_image_url") else None
        if bool(fdef and fdef.allow_multiple) or spec.split is not None:
            return self.column(key, spec, batch).values
        kind = self._kind(key, spec, fdef)
        memo = self._memo(key)
        arr, read = extract(spec, batch).values, separators_for(spec, batch)
        return check_array(arr, kind, fdef, read, self.user_ids, memo).values

    def keys_only(self, batch: pa.RecordBatch) -> list[str | None]:
        """The duplicate-detection key of each row (first pass), as in :meth:`map_batch`.

        A rule is only worked out for the rows that no earlier rule gave a key (all values
        are computed row by row, so a subset of rows gives the same values)."""
        n = batch.num_rows
        keys: list[str | None] = [None] * n
        todo: list[int] | None = None  # rows without a key yet (None: all)
        for rule in self.mapping.match_by:
            by = rule.by
            if todo is None:
                keys = [f"{by}:{v}" if v else None for v in self._rule_values(rule, batch, None)]
                todo = [i for i, k in enumerate(keys) if k is None]
            else:
                sub = batch.take(pa.array(todo, pa.int64()))
                left = []
                for i, v in zip(todo, self._rule_values(rule, sub, None), strict=True):
                    if v:
                        keys[i] = f"{by}:{v}"
                    else:
                        left.append(i)
                todo = left
            if not todo:
                break
        return keys

    def key_hashes(
        self, batch: pa.RecordBatch
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """A 64-bit hash of each row's :meth:`keys_only` key, and which rows have one (the
        hash of rows without is 0). Equal keys have equal hashes within the process; the key
        strings are never made (Python's hash of the match value, mixed with the hash of the
        rule's ``by``: SipHash for strings)."""
        n = batch.num_rows
        hashes = np.zeros(n, dtype=np.int64)
        has = np.zeros(n, dtype=bool)
        todo: npt.NDArray[np.intp] | None = None  # rows without a key yet (None: all)
        for rule in self.mapping.match_by:
            sub = batch if todo is None else batch.take(pa.array(todo, pa.int64()))
            values = self._rule_values(rule, sub, None)
            mask = list(map(bool, values))  # as ``if v``
            got = np.array(mask, dtype=bool)
            at = np.flatnonzero(got) if todo is None else todo[got]
            hashes[at] = np.fromiter(map(hash, compress(values, mask)), np.int64, len(at))
            hashes[at] ^= hash(rule.by)
            has[at] = True
            todo = np.flatnonzero(~got) if todo is None else todo[~got]
            if not len(todo):
                break
        return hashes, has

    def map_batch(self, batch: pa.RecordBatch) -> MappedBatch:
        """Map one batch."""
        return self.map_columns(batch).rows()

    def map_columns(self, batch: pa.RecordBatch) -> MappedColumns:
        """Map one batch column by column, its batch inputs not built yet
        (:meth:`MappedColumns.rows` builds those of any range of its rows)."""
        n = batch.num_rows
        m = self.mapping
        name = self.column("name", m.name, batch)
        # a field with ``ref`` is filled from another mapping's ledger when the row is sent
        fields = [self.column(k, s, batch) for k, s in m.fields.items() if s.ref is None]
        cols = {"name": name.values, **{c.key: c.values for c in fields}}
        image = (
            self.column("profile_image_url", m.profile_image_url, batch)
            if (m.profile_image_url is not None)
            else None
        )
        keys, bys, match_vals = match_keys(n, self._key_columns(batch, cols))
        checked = [name, *fields] + ([image] if image is not None else [])
        owner_how: list[str | None] | None = None
        owner_col: Column | None = None
        if self.owner is not None and m.owner is not None:
            ex = extract(FieldSpec(column=m.owner.column), batch)
            owner_ids, owner_how, reasons, hints = self.owner.resolve_rows(ex.values)
            n_ids = len(owner_ids)
            present = np.fromiter(map(is_not, owner_ids, repeat(None)), bool, n_ids)
            owner_col = Column(
                "owned_by_user_id",
                f"column '{m.owner.column}' → owner",
                owner_ids,
                present,
                reasons,
                hints,
                ex.values if reasons is not None else None,
            )
            checked.append(owner_col)
        errors = nul_errors(batch, self.columns_used)
        row_hints: dict[int, dict[str, Any]] = {}
        for col in checked:
            if col.reasons is None:
                continue
            for i in compress(range(n), col.reasons):  # the rows with a reason
                if errors[i] is None:
                    errors[i] = col.error(i)
                    hint = col.hints[i] if col.hints is not None else None
                    if hint:
                        row_hints[i] = {"field": col.key, **hint}
        if m.on_missing_key == "fail" and m.match_by:
            rules = ", ".join(r.column or r.by for r in m.match_by)
            for i in range(n):
                if keys[i] is None and errors[i] is None:
                    errors[i] = f"no usable match key: {rules} empty (on_missing_key: fail)"
        field_cols = fields + ([owner_col] if owner_col is not None else [])
        return MappedColumns(
            name.values,
            field_cols,
            image,
            errors,
            row_hints,
            keys,
            bys,
            match_vals,
            owner_how or [None] * n,
        )
