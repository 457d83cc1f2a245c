"""Config-level checks of a mapping against the live schema: errors name file, line, key."""

from __future__ import annotations

from recordsync.config.loader import mapping_line
from recordsync.config.models import FieldSpec, MappingConfig
from recordsync.core.errors import ConfigError
from recordsync.core.suggest import did_you_mean
from recordsync.validate.schema import ObjectType, Schema


def _close(word: str, choices: list[str]) -> str:
    close = did_you_mean(word, choices)
    return f"did you mean '{close}'? " if close is not None else ""


def _option_problem(spec: FieldSpec, ftype: str, multi: bool) -> tuple[str, str] | None:
    """An option that cannot apply to the field's type: (option, why)."""
    if spec.split is not None and not multi:
        return "split", "'split' makes a list, but the field takes one value"
    if (spec.date_format or spec.datetime_format) and ftype not in ("date", "datetime"):
        option = "date_format" if spec.date_format else "datetime_format"
        return option, f"'{option}' applies to date and datetime fields only"
    numeric = ftype in ("number", "currency", "percentage")
    if (spec.thousands_separator or spec.decimal_separator != ".") and not numeric:
        option = "thousands_separator" if spec.thousands_separator else "decimal_separator"
        return option, f"'{option}' applies to number, currency and percentage fields only"
    if spec.timezone is not None and ftype != "datetime":
        return "timezone", "'timezone' applies to datetime fields only"
    if spec.transform is not None and (ftype not in ("text", "long_text") or multi):
        return "transform", f"'transform: {spec.transform}' gives a domain: a text field's value"
    return None


def check_mapping(mapping: MappingConfig, schema: Schema) -> ObjectType:
    """The mapping's object type, after checking every mapped field exists on it."""
    file = mapping.label
    otype = schema.object_type(mapping.object_type)
    if otype is None:
        raise ConfigError(
            f"unknown object type '{mapping.object_type}'",
            file=file,
            line=mapping_line(mapping, "object_type"),
            key="object_type",
            hint=f"{_close(mapping.object_type, schema.slugs)}object types of this target: "
            + ", ".join(schema.slugs),
        )
    names = sorted(otype.fields)
    unknown = [f for f in mapping.fields if otype.field(f) is None]
    if unknown:  # every one of them at once, each with its line and closest name
        fname = unknown[0]
        msg = f"unknown field '{fname}' on {otype.slug}"
        if len(unknown) > 1:
            each = [
                f"{file}:{mapping_line(mapping, 'fields', f)} [fields.{f}]: unknown field '{f}'"
                + (f" ({_close(f, names).strip()})" if _close(f, names) else "")
                for f in unknown
            ]
            msg = f"{len(unknown)} unknown fields on {otype.slug}: " + ", ".join(
                repr(f) for f in unknown
            )
            msg += "\n  " + "\n  ".join(each)
        raise ConfigError(
            msg,
            file=file,
            line=mapping_line(mapping, "fields", fname),
            key=f"fields.{fname}",
            hint=f"{_close(fname, names)}fields of {otype.slug}: {', '.join(names)}",
        )
    for fname, spec in mapping.fields.items():
        fdef = otype.field(fname)
        assert fdef is not None
        problem = _option_problem(spec, fdef.type, fdef.allow_multiple)
        if problem is not None:
            option, text = problem
            raise ConfigError(
                f"fields.{fname}: {text}",
                file=file,
                line=mapping_line(mapping, "fields", fname, option),
                key=f"fields.{fname}.{option}",
                hint=f"'{fname}' is a {fdef.type} field"
                + (" (multiple values)" if fdef.allow_multiple else ""),
            )
    for i, rule in enumerate(mapping.match_by):
        if rule.by == "email" and otype.slug != "contacts":
            raise ConfigError(
                f"match_by 'email' works only for contacts, not {otype.slug}",
                file=file,
                line=mapping_line(mapping, "match_by", i),
                key=f"match_by.{i}",
                hint="use 'id' or 'name' for this object type",
            )
    missing = [
        f.name
        for f in otype.fields.values()
        if f.required and f.name not in mapping.fields and f.default_value is None
    ]
    if missing:
        raise ConfigError(
            f"required field(s) of {otype.slug} not mapped: {', '.join(missing)}",
            file=file,
            line=mapping_line(mapping, "fields"),
            key="fields",
            hint="map them (column, template or value): records cannot be created without them",
        )
    return otype
