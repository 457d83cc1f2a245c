"""Everything ``recordsync init`` infers for one source, with the evidence for each part."""

from __future__ import annotations

from dataclasses import dataclass, field

from recordsync.infer.choice import Choice


@dataclass(slots=True)
class Proposal:
    """The mapping's parts with their evidence. ``refs`` are reference columns (a
    relationship filled from another step of the pipeline): a one-file mapping writes them
    commented, and they are among ``unmapped`` too."""

    object_type: str
    name: dict[str, str] | None = None
    name_evidence: str = ""
    fields: list[Choice] = field(default_factory=list)
    match_by: list[str] = field(default_factory=list)
    match_note: str = ""
    owner: Choice | None = None
    ledger_key: str | None = None
    ledger_evidence: str = ""
    refs: list[Choice] = field(default_factory=list)
    null_values: list[str] = field(default_factory=list)
    unmapped: list[tuple[str, str]] = field(default_factory=list)
    missing_required: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, str]:
        """field → column, for scoring (``name`` and ``owner`` included)."""
        out = {c.field: c.column for c in self.fields}
        if self.name is not None:
            out["name"] = self.name.get("column") or self.name.get("template", "")
        if self.owner is not None:
            out["owner"] = self.owner.column
        return out
