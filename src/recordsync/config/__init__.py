"""Mapping and pipeline configuration: strict models, YAML loading with file/line/key errors."""

from recordsync.config.loader import load_mapping, load_pipeline, mapping_line
from recordsync.config.models import (
    CircuitBreaker,
    FieldSpec,
    MappingConfig,
    MatchRule,
    OwnerConfig,
    PipelineConfig,
    ReportSettings,
    SendSettings,
    SourceConfig,
    StepConfig,
)

__all__ = [
    "CircuitBreaker",
    "FieldSpec",
    "MappingConfig",
    "MatchRule",
    "OwnerConfig",
    "PipelineConfig",
    "ReportSettings",
    "SendSettings",
    "SourceConfig",
    "StepConfig",
    "load_mapping",
    "load_pipeline",
    "mapping_line",
]
