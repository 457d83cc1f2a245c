"""Load mapping and pipeline files into strict models; errors name file, line and key."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from recordsync.config.models import RUNTIME_KEYS, MappingConfig, PipelineConfig
from recordsync.config.yamlmarks import line_of, load_yaml
from recordsync.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def _key(loc: tuple[int | str, ...]) -> str:
    # drop pydantic's union/validator tags (e.g. 'function-before[...]')
    parts = [str(p) for p in loc if not (isinstance(p, str) and "[" in p)]
    return ".".join(parts)


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
                msg = "unknown key (check the spelling; see docs/mapping.md for every option)"
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
    return mapping


def load_pipeline(path: str | Path) -> PipelineConfig:
    """Read a pipeline and every mapping it names (paths relative to the pipeline file)."""
    p = Path(path)
    data, node = load_yaml(p)
    pipeline = _validate(PipelineConfig, data, p, node, "pipeline")
    pipeline._path = p
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
