"""What a config file is: a pipeline (``steps:``), a mapping (``object_type:``), or neither.

``recordsync run``, ``validate`` and ``retry`` take either kind: a mapping file is run as a
one-step pipeline named after the file (its state, lock and reports use the file's stem).
Anything else gets one message saying what was expected, instead of the errors of a
pipeline validation that could never fit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from recordsync.config.models import MappingConfig, PipelineConfig, StepConfig
from recordsync.core.errors import ConfigError
from recordsync.core.suggest import did_you_mean

DATA_SUFFIXES = (".csv", ".tsv", ".txt", ".gz", ".bz2", ".zst", ".parquet", ".pq", ".xlsx")


def file_kind(data: Any) -> Literal["pipeline", "mapping"] | None:
    """``pipeline`` for a YAML mapping with ``steps``, ``mapping`` for one with
    ``object_type`` (and no ``steps``), else None."""
    if not isinstance(data, dict):
        return None
    if "steps" in data:
        return "pipeline"
    return "mapping" if "object_type" in data else None


def one_step_pipeline(path: Path, mapping: MappingConfig) -> PipelineConfig:
    """The pipeline ``steps: [path]``, with the loaded mapping attached (step name: the stem)."""
    pipeline = PipelineConfig(steps=[StepConfig(mapping=path.name, name=path.stem)])
    pipeline._path = path
    step = pipeline.steps[0]
    step._config = mapping
    step._base_dir = path.parent
    return pipeline


def _usage(path: Path) -> str:
    return (
        f"create a mapping with `recordsync init {path} --type OBJECT_TYPE`, or import the"
        f" file in one go with `recordsync import {path} --type OBJECT_TYPE`"
    )


def refuse_data_file(path: Path) -> None:
    """A CSV or Parquet file given where a config belongs: say so, and what to run instead."""
    if path.suffix.lower() in DATA_SUFFIXES or path.name.lower().endswith(DATA_SUFFIXES):
        raise ConfigError(
            "this is a data file, not a pipeline or mapping (YAML)",
            file=str(path),
            hint=_usage(path),
        )


def neither_error(path: Path, data: Any) -> ConfigError:
    """The one error for a YAML file that is neither a pipeline nor a mapping."""
    what = "expected a pipeline (a `steps:` list of mapping files) or a mapping (`object_type:`"
    what += " and `source:`)"
    if not isinstance(data, dict):
        found = "an empty file" if data is None else f"a YAML {type(data).__name__}"
        return ConfigError(f"{what}; found {found}", file=str(path), line=1, hint=_usage(path))
    keys = [str(k) for k in data]
    close = [(k, c) for k in keys if (c := did_you_mean(k, ["steps", "object_type"]))]
    hint = (
        f"did you mean '{close[0][1]}' (line key '{close[0][0]}')?"
        if close
        else f"its top-level keys are {', '.join(repr(k) for k in keys) or 'none'}; "
        + _usage(path)
    )
    return ConfigError(f"{what}; found neither key", file=str(path), line=1, hint=hint)
