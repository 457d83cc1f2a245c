"""Strict models of mapping configs (``configs/*.yaml``) and pipelines (``pipelines/*.yaml``).

Unknown keys are errors. Runtime settings (base URL, API key) never live here: they come from
flags, environment and profiles (see the run settings). The parts of a mapping (source,
fields, match rules, owner, ledger key, mirror deletes) are in :mod:`.mapping_parts`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, PrivateAttr, field_validator, model_validator

from recordsync.config.after_run import AfterRun, VerifyOverride, VerifySettings
from recordsync.config.incremental import check_mapping_detection
from recordsync.config.mapping_parts import TEMPLATE_FIELD as TEMPLATE_FIELD
from recordsync.config.mapping_parts import FieldSpec as FieldSpec  # re-exported: the parts
from recordsync.config.mapping_parts import (
    LedgerKey,
    MirrorDeletes,
    Strict,
)
from recordsync.config.mapping_parts import MatchRule as MatchRule
from recordsync.config.mapping_parts import OwnerConfig as OwnerConfig
from recordsync.config.mapping_parts import SourceConfig as SourceConfig
from recordsync.config.refspec import RefBy as RefBy  # re-exported: the ``ref`` option
from recordsync.config.refspec import RefSpec as RefSpec
from recordsync.config.unattended import HistorySettings, NotifySettings, VolumeGuard
from recordsync.core.errors import ConfigError

RUNTIME_KEYS = frozenset({"base_url", "api_key", "url", "key", "token"})
MAX_PIPELINE_NAME = 200
"""The longest pipeline name (``name:``, else the pipeline file's stem), in characters: it
names the state's lock file (``locks/<name>.lock``), which a file system takes up to 255
bytes long."""


def pipeline_name(config_name: str | None, path: str | Path) -> str:
    """The pipeline's name: its ``name:``, else its file's stem; a ConfigError naming the
    key and the limit when it is longer than :data:`MAX_PIPELINE_NAME`."""
    name = config_name or Path(path).stem
    reason = name_too_long(name)
    if reason is None:
        return name
    if config_name:
        raise ConfigError(reason, file=str(path), key="name")
    raise ConfigError(
        f"without a `name:` the file's name is the pipeline's name: {reason}",
        file=str(path),
        hint="rename the file, or give the pipeline (a pipeline file naming this one as a "
        f"step) a `name:` of at most {MAX_PIPELINE_NAME} characters",
    )


def name_too_long(name: str) -> str | None:
    """Why ``name`` cannot name a pipeline's state, or None."""
    if len(name) <= MAX_PIPELINE_NAME:
        return None
    return (
        f"a pipeline name has at most {MAX_PIPELINE_NAME} characters (it names the state's "
        f"lock file); this one has {len(name)}"
    )


_RUN_ONLY: dict[str, Any] = {
    "description": True,
    "volume_guard": True,
    "verify": True,
    "source": {"batch_size", "memory_limit"},
}
"""Mapping settings that steer a run without changing a batch input
(:meth:`MappingConfig.inputs_json`)."""


class MappingConfig(Strict):
    """One source → one object type."""

    object_type: str
    source: SourceConfig
    name: FieldSpec
    description: str | None = None
    match_by: list[MatchRule] = Field(default_factory=list)
    on_missing_key: Literal["create", "fail"] = "create"
    duplicates: Literal["first", "last", "fail"] = "last"
    duplicates_expected: bool = False
    """Rows not sent as duplicates do not count against exit 0 (they are still reported);
    written ``duplicates: {keep: last, expected: true}``."""
    merges: Literal["hold", "expected"] = "hold"
    """``hold``: a row predicted to fold into the record another row claims is not sent
    (status ``merged``); ``expected``: such rows are sent and reported ``updated``."""
    owner: OwnerConfig | None = None
    profile_image_url: FieldSpec | None = None
    fields: dict[str, FieldSpec] = Field(default_factory=dict)
    ledger_key: LedgerKey | None = None
    match_by_ledger_id: bool = False
    require_key: bool = False  # config/idempotency.py: a key that survives lost state
    mirror_deletes: MirrorDeletes = Field(default_factory=MirrorDeletes)
    volume_guard: VolumeGuard = Field(default_factory=VolumeGuard)
    """The source's row count compared with the last healthy runs (config/unattended.py)."""
    verify: VerifyOverride | None = None  # config/after_run.py: overrides the pipeline's

    _path: Path | None = PrivateAttr(default=None)
    _node: yaml.Node | None = PrivateAttr(default=None)

    @field_validator("match_by", mode="before")
    @classmethod
    def _one_rule(cls, v: Any) -> Any:
        return [v] if isinstance(v, str | dict) else v

    @model_validator(mode="before")
    @classmethod
    def _query_key_is_ledger_key(cls, data: Any) -> Any:
        """A query source's one-column ``key`` is the ledger key unless one is given: the
        state store then knows a row by it across runs (docs/mapping.md)."""
        if not isinstance(data, dict) or "ledger_key" in data:
            return data
        source = data.get("source")
        if not isinstance(source, dict) or source.get("query") is None:
            return data
        key = source.get("key")
        key = [key] if isinstance(key, str) else key
        if isinstance(key, list) and len(key) == 1 and isinstance(key[0], str):
            return {**data, "ledger_key": {"column": key[0]}}
        return data

    @model_validator(mode="before")
    @classmethod
    def _duplicates_block(cls, data: Any) -> Any:
        """``duplicates: {keep: first|last|fail, expected: bool}`` → the two options."""
        if not isinstance(data, dict) or not isinstance(data.get("duplicates"), dict):
            return data
        block = dict(data["duplicates"])
        unknown = sorted(set(block) - {"keep", "expected"})
        if unknown:
            raise ValueError(f"duplicates: unknown key(s) {', '.join(unknown)} (keep, expected)")
        if "duplicates_expected" in data:
            raise ValueError("give 'expected' inside 'duplicates', not also duplicates_expected")
        out = {k: v for k, v in data.items() if k != "duplicates"}
        if "keep" in block:
            out["duplicates"] = block["keep"]
        if "expected" in block:
            out["duplicates_expected"] = block["expected"]
        return out

    @model_validator(mode="after")
    def _rules(self) -> MappingConfig:
        for rule in self.match_by:
            if rule.by == "id" and rule.column is None:
                raise ValueError("match_by rule 'id' needs a 'column' holding record ids")
            if rule.by == "email" and rule.column is None and "email" not in self.fields:
                raise ValueError(
                    "match_by 'email' uses fields.email; map an 'email' field or give 'column'"
                )
        if self.owner is not None and "owned_by_user_id" in self.fields:
            raise ValueError("map the owner either with 'owner' or fields.owned_by_user_id")
        check_mapping_detection(self)
        if self.source.header_case == "insensitive":  # the names its header is read as
            self.source._case_names = tuple(self.source_columns())
        return self

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def label(self) -> str:
        return str(self._path) if self._path is not None else f"<mapping {self.object_type}>"

    def inputs_json(self) -> str:
        """The settings the step's batch inputs are made by, as JSON, for its fingerprint
        (:mod:`recordsync.prepare.fingerprint`): options left at their defaults are left out,
        so that an option a later version adds changes no fingerprint, and so are those that
        only steer how a run goes (the description, the volume guard, the read-back, and the
        source's ``batch_size`` and ``memory_limit``). Otherwise an upgrade, or tuning DuckDB's
        memory, would make the next nightly run map every row again to compare it with the
        ledger: at 10M rows, half an hour where a 1%-changed run takes a minute."""
        return self.model_dump_json(exclude_defaults=True, exclude=_RUN_ONLY)

    def key_columns(self) -> list[str]:
        """Source columns that the match keys are computed from (first pass of duplicates)."""
        specs = [self.name] + ([self.fields["email"]] if "email" in self.fields else [])
        cols = [c for s in specs for c in s.columns]
        cols += [r.column for r in self.match_by if r.column]
        return list(dict.fromkeys(cols))

    def source_columns(self) -> list[str]:
        """Every source column the mapping reads, in first-use order."""
        specs = [self.name, self.profile_image_url, *self.fields.values()]
        cols = [c for s in specs if s is not None for c in s.columns]
        cols += [r.column for r in self.match_by if r.column]
        if self.owner is not None:
            cols.append(self.owner.column)
        if self.ledger_key is not None:
            cols.append(self.ledger_key.column)
        return list(dict.fromkeys(cols))


class CircuitBreaker(Strict):
    max_failure_rate: float = Field(default=0.5, gt=0, le=1)
    max_creates: int | None = Field(default=None, ge=0)


class SendSettings(Strict):
    chunk_size: int = Field(default=100, ge=1, le=100)
    canary_chunk_size: int = Field(default=10, ge=1, le=100)
    max_request_bytes: int = Field(default=5 * 1024 * 1024, ge=4096)  # the service's body limit
    circuit_breaker: CircuitBreaker = Field(default_factory=CircuitBreaker)


class ReportSettings(Strict):
    directory: str = "reports"
    list_unchanged: bool = False
    """List rows found unchanged in results.csv too (else they are counted only)."""


class StepConfig(Strict):
    mapping: str
    name: str | None = None

    _config: MappingConfig | None = PrivateAttr(default=None)
    _base_dir: Path | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"mapping": data} if isinstance(data, str) else data

    @property
    def config(self) -> MappingConfig:
        if self._config is None:
            raise RuntimeError("step not loaded: use recordsync.config.load_pipeline")
        return self._config

    @property
    def base_dir(self) -> Path:
        """Directory that the mapping's relative source path is resolved from."""
        return self._base_dir if self._base_dir is not None else Path.cwd()

    @property
    def step_name(self) -> str:
        return self.name or Path(self.mapping).stem


class PipelineConfig(Strict):
    """Mappings in order, an optional target profile name, report and send settings."""

    name: str | None = None
    description: str | None = None
    target: str | None = None
    steps: list[StepConfig] = Field(min_length=1)
    report: ReportSettings = Field(default_factory=ReportSettings)
    send: SendSettings = Field(default_factory=SendSettings)
    notify: NotifySettings | None = None
    """Alerts to webhooks when a run's health changes (config/unattended.py)."""
    history: HistorySettings = Field(default_factory=HistorySettings)
    verify: VerifySettings = Field(default_factory=VerifySettings)  # config/after_run.py
    after_run: AfterRun = Field(default_factory=AfterRun)

    _path: Path | None = PrivateAttr(default=None)

    @field_validator("name")
    @classmethod
    def _short_name(cls, v: str | None) -> str | None:
        reason = name_too_long(v) if v is not None else None
        if reason is not None:
            raise ValueError(reason)
        return v

    @model_validator(mode="after")
    def _unique_names(self) -> PipelineConfig:
        names = [s.step_name for s in self.steps]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"step names must be unique; give 'name' to: {', '.join(dup)}")
        return self

    @property
    def path(self) -> Path | None:
        return self._path
