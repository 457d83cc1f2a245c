"""Load mapping and pipeline files into strict models; errors name file, line and key."""

from __future__ import annotations

import os
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from recordsync.config.header_case import check_header_case
from recordsync.config.idempotency import check_require_key
from recordsync.config.kind import file_kind, neither_error, one_step_pipeline, refuse_data_file
from recordsync.config.models import RUNTIME_KEYS, MappingConfig, PipelineConfig, pipeline_name
from recordsync.config.yamlmarks import line_of, load_yaml
from recordsync.core.errors import ConfigError
from recordsync.core.suggest import did_you_mean

M = TypeVar("M", bound=BaseModel)


def _key(loc: tuple[int | str, ...]) -> str:
    # drop pydantic's union/validator tags (e.g. 'function-before[...]')
    parts = [str(p) for p in loc if not (isinstance(p, str) and "[" in p)]
    return ".".join(parts)


def _steps(annotation: Any) -> list[tuple[int, type[BaseModel]]]:
    """(containers to pass, model) pairs an annotation can hold: 0 for the model itself,
    1 for a list item or dict value of models (through Optional and unions)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(0, annotation)]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _steps(args[0])
    if origin in (typing.Union, types.UnionType):
        return [s for a in args for s in _steps(a)]
    if origin in (list, dict) and args:
        return [(depth + 1, m) for depth, m in _steps(args[-1])]
    return []


def _allowed_keys(model: type[BaseModel], parent: tuple[int | str, ...]) -> list[str]:
    """Every key allowed in the YAML mapping at ``parent`` (a pydantic error location)."""
    current: list[tuple[int, type[BaseModel]]] = [(0, model)]
    for part in parent:
        nxt: list[tuple[int, type[BaseModel]]] = []
        for depth, m in current:
            if depth:  # a list index or dict key
                nxt.append((depth - 1, m))
            elif isinstance(part, str) and part in m.model_fields:
                nxt += _steps(m.model_fields[part].annotation)
        current = nxt
    return sorted({f.alias or k for d, m in current if d == 0 for k, f in m.model_fields.items()})


def _unknown_key(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    msg = "unknown key"
    key = loc[-1] if loc else None
    if isinstance(key, str):
        close = did_you_mean(key, _allowed_keys(model, loc[:-1]))
        if close is not None:
            msg += f": did you mean '{close}'?"
    return msg + " (check the spelling; see docs/mapping.md for every option)"


def _validate(model: type[M], data: Any, path: Path, node: yaml.Node | None, kind: str) -> M:
    if not isinstance(data, dict):
        raise ConfigError(
            f"a {kind} file must be a YAML mapping of keys to values", file=str(path), line=1
        )
    runtime = sorted(RUNTIME_KEYS & set(data))
    if runtime:
        key = runtime[0]
        raise ConfigError(
            f"'{key}' is a runtime setting and is not allowed in a {kind} file",
            file=str(path),
            line=line_of(node, [key]),
            key=key,
            hint="give the base URL and API key with flags, environment (RECORDSYNC_API_KEY) "
            "or a profile, never in a committed config",
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        lines = []
        for err in errors:
            loc = tuple(err["loc"])
            clean = tuple(p for p in loc if not (isinstance(p, str) and "[" in p))
            line = line_of(node, clean)
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = _unknown_key(model, clean)
            lines.append(f"{path}:{line} [{_key(loc)}]: {msg}")
        first = errors[0]
        loc0 = tuple(first["loc"])
        clean0 = tuple(p for p in loc0 if not (isinstance(p, str) and "[" in p))
        summary = (
            lines[0].split(": ", 1)[1]
            if len(lines) == 1
            else (f"{len(lines)} problems:\n  " + "\n  ".join(lines))
        )
        raise ConfigError(
            summary, file=str(path), line=line_of(node, clean0), key=_key(loc0) or None
        ) from None


def load_mapping(path: str | Path) -> MappingConfig:
    """Read one mapping config (one source → one object type)."""
    p = Path(path)
    data, node = load_yaml(p)
    mapping = _validate(MappingConfig, data, p, node, "mapping")
    mapping._path = p
    mapping._node = node
    check_require_key(mapping, line_of(node, ["require_key"]))
    check_header_case(mapping, line_of(node, ["source", "header_case"]))
    return mapping


def load_pipeline(path: str | Path) -> PipelineConfig:
    """Read a pipeline and every mapping it names (paths relative to the pipeline file).

    A mapping file is read as a one-step pipeline (:mod:`recordsync.config.kind`)."""
    p = Path(path)
    refuse_data_file(p)
    data, node = load_yaml(p)
    if file_kind(data) == "mapping":  # a mapping is a one-step pipeline
        pipeline_name(None, p)
        return one_step_pipeline(p, load_mapping(p))
    if file_kind(data) is None:
        raise neither_error(p, data)
    pipeline = _validate(PipelineConfig, data, p, node, "pipeline")
    pipeline._path = p
    pipeline_name(pipeline.name, p)  # the file's stem when there is no name
    for i, step in enumerate(pipeline.steps):
        mpath = Path(os.path.normpath(p.parent / step.mapping))
        if not mpath.is_file():
            raise ConfigError(
                f"mapping file not found: {mpath}",
                file=str(p),
                line=line_of(node, ["steps", i]),
                key=f"steps.{i}.mapping",
                hint="paths in a pipeline are relative to the pipeline file",
            )
        step._config = load_mapping(mpath)
        step._base_dir = mpath.parent
    return pipeline


def mapping_line(mapping: MappingConfig, *loc: int | str) -> int | None:
    """Line of a key in the mapping file (for config errors found later, e.g. vs. schema)."""
    return line_of(mapping._node, loc)
