"""Score ``recordsync init``'s inference on a corpus of exports with expected mappings.

The made-up corpus (``tests/data/init_corpus/corpus.yaml``) lists, per file, each column's
expected mapping (a field, ``name``, ``name.part``, ``owner``, ``ledger_key``, a relationship
field for a reference column, or None: leave it unmapped) and the kind of its values. The
real corpus (``tests/data/init_corpus/real/``: public exports nobody here wrote) has one
``<name>.expect.yaml`` per export, in the same terms. The score is the share of mappable
columns mapped right with no edit; a column mapped to a field whose type its values cannot
have is a *wrong type* (which must never happen), a column mapped where None was expected a
*false positive*.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recordsync.config.yamlmarks import load_yaml
from recordsync.infer.engine import Proposal, infer
from recordsync.infer.sample import read_sample
from recordsync.validate.schema import Schema

KIND_TYPES: dict[str, frozenset[str]] = {
    "email": frozenset({"email"}),
    "phone": frozenset({"phone"}),
    "phone_plain": frozenset({"phone"}),
    "url": frozenset({"url"}),
    "linkedin": frozenset({"url"}),
    "site": frozenset({"url"}),
    "birthday": frozenset({"date", "datetime"}),
    "score": frozenset({"number", "currency", "percentage", "relationship", "phone"}),
    "employees": frozenset({"number", "currency", "percentage", "relationship", "phone"}),
    "id": frozenset({"number", "currency", "percentage", "relationship", "phone"}),
    "zip": frozenset({"number", "currency", "percentage", "relationship", "phone"}),
    "prob": frozenset({"number", "currency", "percentage"}),
    "percent": frozenset({"number", "currency", "percentage"}),
    "employees_comma": frozenset({"number", "currency", "percentage"}),
    "money_us": frozenset({"number", "currency", "percentage"}),
    "money_eu": frozenset({"number", "currency", "percentage"}),
    "money_plain": frozenset({"number", "currency", "percentage"}),
    "yesno": frozenset({"boolean"}),
    "yn": frozenset({"boolean"}),
    "truefalse": frozenset({"boolean"}),
    "iso_date": frozenset({"date", "datetime"}),
    "us_date": frozenset({"date", "datetime"}),
    "eu_date": frozenset({"date", "datetime"}),
    "dot_date": frozenset({"date", "datetime"}),
    "iso_time": frozenset({"datetime"}),
    "space_time": frozenset({"datetime"}),
    "us_time": frozenset({"datetime"}),
    "stage_label": frozenset({"select"}),
    "stage_value": frozenset({"select"}),
    "deal_stage": frozenset({"select"}),
    "industry_label": frozenset({"select"}),
    "industry_value": frozenset({"select"}),
    "tags_semi": frozenset({"select"}),
    "tags_comma": frozenset({"select"}),
}
"""Field types (besides text and long_text, which hold anything) each kind of value fits."""
TEXT = frozenset({"text", "long_text"})


@dataclass
class Score:
    mappable: int = 0
    right: int = 0
    misses: list[str] = field(default_factory=list)
    wrong_type: list[str] = field(default_factory=list)
    false_positives: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.right / self.mappable if self.mappable else 0.0


def mapped_as(prop: Proposal, column: str) -> str | None:
    """What the proposal made of ``column``: a field name (a reference's too), name,
    name.part, owner, ledger_key or None."""
    if prop.ledger_key == column:
        return "ledger_key"
    for ref in prop.refs:
        if ref.column == column:
            return ref.field
    if prop.name is not None:
        if prop.name.get("column") == column:
            return "name"
        if "{" + column + "}" in prop.name.get("template", ""):
            return "name.part"
    if prop.owner is not None and prop.owner.column == column:
        return "owner"
    return next((c.field for c in prop.fields if c.column == column), None)


def score_corpus(
    corpus_dir: Path, schema_json: list[dict[str, Any]], users: list[dict[str, Any]]
) -> Score:
    spec = load_yaml(corpus_dir / "corpus.yaml")[0]
    return _score(corpus_dir, spec, schema_json, users, KIND_TYPES)


REF_KINDS = {
    "name": frozenset({"text", "company"}),
    "domain": frozenset({"url", "site"}),
    "key": frozenset({"id", "text"}),
}
"""Kinds of values a reference by name, by domain or by key compares."""
REAL_KIND_TYPES = {**KIND_TYPES, "space_time": frozenset({"date", "datetime"}), "text": frozenset()}
"""As :data:`KIND_TYPES`; a date-time may also go into a date field (its time dropped)."""


def score_real_corpus(
    corpus_dir: Path, schema_json: list[dict[str, Any]], users: list[dict[str, Any]]
) -> Score:
    """The score on ``corpus_dir/*.expect.yaml`` (the public exports of ``real/``)."""
    spec = []
    for path in sorted(corpus_dir.glob("*.expect.yaml")):
        doc = load_yaml(path)[0]
        columns = [{"header": h, **c} for h, c in doc["columns"].items()]
        spec.append({"file": doc["file"], "type": doc["type"], "columns": columns})
    return _score(corpus_dir, spec, schema_json, users, REAL_KIND_TYPES)


def _score(
    corpus_dir: Path,
    spec: list[dict[str, Any]],
    schema_json: list[dict[str, Any]],
    users: list[dict[str, Any]],
    kinds: dict[str, frozenset[str]],
) -> Score:
    schema = Schema.from_api(schema_json)
    score = Score()
    for entry in spec:
        otype = schema.object_type(entry["type"])
        assert otype is not None, entry["type"]
        raw = next(t for t in schema_json if t["slug"] == otype.slug)
        displays = {f["field_name"]: f.get("display_name") or "" for f in raw["fields"]}
        sample = read_sample(corpus_dir / entry["file"])
        prop = infer(
            sample.header, sample.values, otype, users, sample.shapes, displays, schema
        )
        for col in entry["columns"]:
            header, expect, kind = col["header"], col["expect"], col["kind"]
            got = mapped_as(prop, header)
            where = f"{entry['file']}: {header!r} → {got} (expected {expect})"
            special = (None, "name", "name.part", "owner", "ledger_key")
            fdef = otype.field(got) if got not in special else None
            ref = next((r.options["ref"] for r in prop.refs if r.column == header), None)
            if ref is not None:  # compared with the referenced rows' names, sites or keys
                by = REF_KINDS[ref.get("by", "key")]
                if kind not in by:
                    score.wrong_type.append(f"{where}: {kind} values in a reference by {by}")
            elif fdef is not None and fdef.type not in TEXT | kinds.get(kind, frozenset()):
                score.wrong_type.append(f"{where}: {kind} values in a {fdef.type} field")
            if expect is None:
                if got is not None:
                    score.false_positives.append(where)
                continue
            score.mappable += 1
            if got == expect:
                score.right += 1
            else:
                score.misses.append(where)
    return score
