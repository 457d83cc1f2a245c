"""A pipeline's references checked before anything is read or sent: every ``ref`` names a
step that runs earlier, and ``ref.by`` names a field that step maps or a column of its
source."""

from __future__ import annotations

from typing import Any

from recordsync.config.loader import mapping_line
from recordsync.config.models import FieldSpec, MappingConfig, RefSpec
from recordsync.core.errors import ConfigError
from recordsync.read import source_columns


def check_refs(pipeline: Any) -> None:
    """Every ``ref`` names a step that runs earlier in the pipeline (its ledger is filled
    first); a configuration error otherwise, before anything is sent."""
    earlier: list[str] = []
    for step in pipeline.steps:
        cfg = step.config
        for fname, spec in cfg.fields.items():
            if spec.ref is not None and spec.ref.mapping not in earlier:
                later = spec.ref.mapping in {s.step_name for s in pipeline.steps}
                raise ConfigError(
                    f"fields.{fname}.ref: step '{spec.ref.mapping}' "
                    + ("runs after this step" if later else "is not a step of this pipeline"),
                    file=cfg.label,
                    line=mapping_line(cfg, "fields", fname),
                    key=f"fields.{fname}.ref.mapping",
                    hint="a reference is resolved from the ledger of an earlier step; steps "
                    f"before '{step.step_name}': {', '.join(earlier) or 'none'}",
                )
            if spec.ref is not None and spec.ref.by is not None:
                check_ref_by(pipeline, cfg, fname, spec.ref)
        earlier.append(step.step_name)


def by_spec(ref: RefSpec, target: MappingConfig, field: str = "") -> FieldSpec:
    """The spec that gives the compared value of a referenced row (a config error naming
    ``fields.<field>.ref.by`` when ``by`` names no usable field of the referenced step)."""
    assert ref.by is not None
    by = ref.by
    if by.column is not None:
        return FieldSpec(column=by.column)
    spec = target.name if by.field == "name" else target.fields.get(by.field or "")
    if spec is None or spec.ref is not None or spec.split is not None:
        usable = ["name"] + [
            k for k, s in target.fields.items() if s.ref is None and s.split is None
        ]
        raise ConfigError(
            f"fields.{field}.ref.by: step '{ref.mapping}' maps no field {by.field!r}"
            + (" that a reference can compare (a list or a ref)" if spec is not None else ""),
            key=f"fields.{field}.ref.by",
            hint=f"fields of '{ref.mapping}': {', '.join(usable)}; or by: {{column: <column>}}",
        )
    return spec


def check_ref_by(pipeline: Any, cfg: MappingConfig, fname: str, ref: RefSpec) -> None:
    """``ref.by`` names a field the referenced step maps, or a column of its source."""
    target = next(s for s in pipeline.steps if s.step_name == ref.mapping)
    line = mapping_line(cfg, "fields", fname)
    try:
        spec = by_spec(ref, target.config, fname)
    except ConfigError as exc:
        detail, key, hint = exc.detail, exc.key, exc.hint
        raise ConfigError(detail, file=cfg.label, line=line, key=key, hint=hint) from None
    have = source_columns(target.config.source, target.base_dir)
    missing = [c for c in spec.columns if c not in have]
    if missing:
        raise ConfigError(
            f"fields.{fname}.ref.by: column {missing[0]!r} is not in the source of step"
            f" '{ref.mapping}'",
            file=cfg.label,
            line=line,
            key=f"fields.{fname}.ref.by",
            hint=f"columns of {target.config.source.label}: {', '.join(map(repr, have))}",
        )
