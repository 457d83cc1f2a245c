"""The ``ref`` option of a field (cross-object references, docs/state.md): which step it
refers to and how a value finds that step's record. Re-exported by :mod:`.models`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)  # as models.Strict


class RefBy(_Strict):
    """Which value of the referenced step's rows a reference is compared with: one of its
    mapped ``field`` s (``name``, ``domain``, ...) or one of its source ``column`` s."""

    field: str | None = None
    column: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            if data.startswith("column:"):
                return {"column": data.removeprefix("column:").strip()}
            return {"field": data}
        return data

    @model_validator(mode="after")
    def _one(self) -> RefBy:
        if (self.field is None) == (self.column is None):
            raise ValueError("give exactly one of 'field' or 'column' (e.g. by: name)")
        return self

    @property
    def label(self) -> str:
        return f"field '{self.field}'" if self.field is not None else f"column '{self.column}'"


class RefSpec(_Strict):
    """A relationship filled from another step of the pipeline (nightly syncs): the column's
    value is that step's ledger key, or, with ``by``, the value of one of its fields or source
    columns (compared after ``normalize``); the field gets the record id."""

    mapping: str
    on_missing: Literal["fail", "unset"] = "fail"
    by: RefBy | None = None
    normalize: Literal["fold", "domain", "exact"] | None = None
    lookup: Literal["run", "service"] = "run"

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"mapping": data}
        if isinstance(data, dict) and "step" in data:
            if "mapping" in data:
                raise ValueError("give 'step' or 'mapping' (the same thing), not both")
            data = {("mapping" if k == "step" else k): v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _normalize_needs_by(self) -> RefSpec:
        if self.normalize is not None and self.by is None:
            raise ValueError(
                "'normalize' applies to 'by'; without 'by' the referenced step's ledger key"
                " normalisation is used"
            )
        if self.lookup == "service" and (self.by is None or self.by.field is None):
            raise ValueError(
                "lookup: service filters the service's records by a field: give 'by' a field"
                " of the referenced step (e.g. by: name), not a column"
            )
        return self

    @property
    def match(self) -> Literal["fold", "domain", "exact"]:
        """How values are compared: ``normalize``, else ``domain`` for ``by: domain``, else
        ``fold`` (trimmed, inner whitespace collapsed, case-folded)."""
        if self.normalize is not None:
            return self.normalize
        return "domain" if self.by is not None and self.by.field == "domain" else "fold"
