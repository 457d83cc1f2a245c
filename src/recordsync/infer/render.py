"""A :class:`~recordsync.infer.engine.Proposal` as a commented mapping file a person reviews.

Every line says where it came from (``# header 'E-mail Address' is a usual name for email;
values are e-mail addresses (high)``); what needs a person comes first: required fields that
no column fills, ambiguous dates, shared owner names. A reference column is written as a
commented field, ready once its step runs earlier in a pipeline. Unmapped columns are listed
at the end, with why.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from recordsync.infer.proposal import Proposal
from recordsync.infer.sample import Sample

PLACEHOLDER = "CHOOSE A COLUMN"
"""The name column when no column looks like a name: the dry run names it as missing."""


def _q(value: Any) -> str:
    """A YAML scalar: JSON's double-quoted strings are valid YAML."""
    return json.dumps(value, ensure_ascii=False)


def render_mapping(prop: Proposal, sample: Sample, source: Path, mapping_path: Path) -> str:
    rel = os.path.relpath(source.resolve(), mapping_path.resolve().parent)
    out: list[str] = [
        f"# Written by `recordsync init {source}` from its header, {_rows(sample)} and the",
        "# target's schema and users. Review it: each line says why it was chosen.",
    ]
    if prop.missing_required:
        out.append(
            "# REQUIRED, not filled by any column (map them before a run): "
            + ", ".join(prop.missing_required)
        )
    out += [f"# WARNING: {w}" for w in prop.warnings]
    out += [f"object_type: {prop.object_type}", "source:", f"  path: {_q(rel)}"]
    if sample.kind == "csv" and sample.delimiter != ",":
        out.append(f"  delimiter: {_q(sample.delimiter)}")
    if sample.kind == "csv" and sample.encoding != "utf-8":
        out.append(f"  encoding: {sample.encoding}")
    if prop.null_values:
        tokens = ", ".join(_q(t) for t in prop.null_values)
        out.append(f"  null_values: [{tokens}]   # cells that stand for no value: read as blank")
    if prop.name is not None:
        key, value = next(iter(prop.name.items()))
        out += ["name:", f"  {key}: {_q(value)}   # {prop.name_evidence}"]
    else:
        out += ["name:", f"  column: {_q(PLACEHOLDER)}   # REQUIRED: no column looks like a name"]
    if prop.ledger_key is not None:
        out.append(f"ledger_key: {_q(prop.ledger_key)}   # {prop.ledger_evidence}")
    if prop.match_by:
        out.append(f"match_by: [{', '.join(prop.match_by)}]   # {prop.match_note}")
    elif prop.match_note:
        out.append(f"# {prop.match_note}")
    if prop.owner is not None:
        o = prop.owner
        out += [
            "owner:",
            f"  column: {_q(o.column)}   # {o.evidence} ({o.confidence})",
            "  on_unknown: fail        # or unowned: keep rows whose owner is not a user",
        ]
    out.append("fields:" if prop.fields else "fields: {}")
    for c in prop.fields:
        comment = f"# {c.evidence} ({c.confidence})"
        if not c.options:
            out.append(f"  {c.field}: {_q(c.column)}   {comment}")
            continue
        out += [f"  {c.field}:   {comment}", f"    column: {_q(c.column)}"]
        for k, v in c.options.items():
            if isinstance(v, dict):  # a value_map: other spellings of options
                out.append(f"    {k}:   # values that spell an option another way")
                out += [f"      {_q(a)}: {_q(b)}" for a, b in v.items()]
            else:
                out.append(f"    {k}: {_q(v)}")
    for r in prop.refs:
        ref = ", ".join(f"{k}: {v}" for k, v in r.options["ref"].items())
        step = r.options["ref"]["step"]
        out += [
            f"  # {r.field}: {r.evidence} ({r.confidence}). A reference is filled from a {step}"
            f" step (with a ledger_key) that runs earlier in the same pipeline: add one, then"
            " uncomment:",
            f"  # {r.field}:",
            f"  #   column: {_q(r.column)}",
            f"  #   ref: {{{ref}}}",
        ]
    if prop.unmapped:
        out.append("# Columns not mapped (add them under fields: if they belong to a field):")
        out += [f"#   {col!r}: {why}" for col, why in prop.unmapped]
    return "\n".join(out) + "\n"


def _rows(sample: Sample) -> str:
    n = max((len(v) for v in sample.values.values()), default=0)
    return f"a sample of {n} row{'s' if n != 1 else ''}"


def render_pipeline(mapping_path: Path, pipeline_path: Path) -> str:
    rel = os.path.relpath(mapping_path.resolve(), pipeline_path.resolve().parent)
    return (
        f"# One-step pipeline written by `recordsync init` (running {mapping_path.name}"
        " directly is the same).\n"
        f"name: {pipeline_path.stem}\nsteps:\n  - {_q(rel)}\n"
    )
