"""Strict models of mapping configs (``configs/*.yaml``) and pipelines (``pipelines/*.yaml``).

Unknown keys are errors. Runtime settings (base URL, API key) never live here: they come from
flags, environment and profiles (see the run settings).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from recordsync.config.refspec import RefBy as RefBy  # re-exported: the ``ref`` option
from recordsync.config.refspec import RefSpec as RefSpec

TEMPLATE_FIELD = re.compile(r"\{([^{}]+)\}")
RUNTIME_KEYS = frozenset({"base_url", "api_key", "url", "key", "token"})


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceConfig(Strict):
    """Where the rows come from: a file (``path``, relative to the mapping file's directory,
    or a URI such as ``s3://bucket/key``) or a SQL ``query`` (:mod:`recordsync.read.sql`)."""

    path: str = ""
    format: Literal["csv", "parquet"] | None = None
    query: str | None = None
    """A SQL query instead of a file; its rows are read in the order of ``key``."""
    engine: Literal["duckdb", "postgres"] = "duckdb"
    database: str | None = None
    """DuckDB: a database file to open read-only (relative to the mapping's directory)."""
    dsn_env: str | None = None
    """PostgreSQL: the environment variable holding the connection string."""
    dsn: str | None = None
    """PostgreSQL: a connection string without a password (libpq finds it: PGPASSWORD,
    ~/.pgpass); one with a password is refused."""
    key: list[str] | None = None
    """The column(s) identifying a query's row: required with ``query``."""
    name: str | None = None
    """How reports name a query source: ``query:<name>`` (default ``query:<engine>``)."""
    delimiter: str = ","
    quotechar: str | None = '"'
    escapechar: str | None = None
    header: bool = True
    columns: list[str] | None = None
    encoding: str = "utf-8"
    skip_rows: int = Field(default=0, ge=0)
    batch_size: int = Field(default=16_384, ge=1, le=1_000_000)  # rows mapped at a time
    max_quoted_lines: int = Field(default=100, ge=1)
    """A quoted field spanning more physical lines is read as swallowed lines (unbalanced
    quote?): each line is reported ``invalid`` on its own (docs/mapping.md)."""
    max_quoted_bytes: int = Field(default=64 << 10, ge=1)
    """The same for a quoted field spanning lines of more bytes than this."""
    header_case: Literal["exact", "insensitive"] = "exact"
    """``insensitive``: the columns the mapping names match header names that differ only in
    case and surrounding spaces (CSV; :mod:`recordsync.config.header_case`)."""

    @field_validator("delimiter", "quotechar", "escapechar")
    @classmethod
    def _one_char(cls, v: str | None) -> str | None:
        if v is not None and len(v) != 1:
            raise ValueError('must be exactly one character (use "\\t" for tab)')
        return v

    @field_validator("key", mode="before")
    @classmethod
    def _one_key(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _columns_without_header(self) -> SourceConfig:
        if not self.header and not self.columns:
            raise ValueError("'columns' is required when 'header' is false")
        if self.query is None:
            sql_only = ("database", "dsn_env", "dsn", "key", "name")
            given = [k for k in sql_only if getattr(self, k) is not None]
            if "engine" in self.model_fields_set:
                given.insert(0, "engine")
            if not self.path:
                raise ValueError("give 'path' (a file) or 'query' (SQL)")
            if given:
                raise ValueError(f"{', '.join(given)}: only for a 'query' source")
            return self
        from recordsync.config.sqlsource import check_query_source

        check_query_source(self)
        return self

    @property
    def label(self) -> str:
        """How reports and messages name the source: the path, or ``query:<name>``."""
        return self.path if self.query is None else f"query:{self.name or self.engine}"

    @property
    def kind(self) -> Literal["csv", "parquet", "sql"]:
        if self.query is not None:
            return "sql"
        if self.format is not None:
            return self.format
        return "parquet" if ".parquet" in self.path or self.path.endswith(".pq") else "csv"


class FieldSpec(Strict):
    """How one output value is built from a row. Exactly one of column, template, value."""

    column: str | None = None
    template: str | None = None
    value: Any = None
    trim: bool = True
    case: Literal["lower", "upper", "title"] | None = None
    transform: Literal["domain", "url_domain", "email_domain"] | None = None
    value_map: dict[str, Any] | None = None
    split: str | None = None
    default: Any = None
    empty: Literal["omit", "null"] = "omit"
    date_format: str | None = None
    datetime_format: str | None = None
    timezone: str | None = None
    decimal_separator: str = "."
    thousands_separator: str | None = None
    ref: RefSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"column": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _one_source(self) -> FieldSpec:
        given = [k for k in ("column", "template", "value") if k in self.model_fields_set]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of 'column', 'template' or 'value' "
                f"(got {', '.join(given) or 'none'})"
            )
        if self.template is not None and not TEMPLATE_FIELD.search(self.template):
            raise ValueError("a template names columns in braces, e.g. '{first_name} {last_name}'")
        if self.date_format and self.datetime_format:
            raise ValueError("give 'date_format' or 'datetime_format', not both")
        if self.timezone is not None:
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                ZoneInfo(self.timezone)
            except (ZoneInfoNotFoundError, ValueError):
                msg = f"unknown timezone {self.timezone!r} (e.g. Europe/Berlin, UTC)"
                raise ValueError(msg) from None
        if self.decimal_separator == self.thousands_separator:
            raise ValueError("decimal_separator and thousands_separator must differ")
        if self.ref is not None and self.column is None:
            raise ValueError("'ref' resolves the value of a 'column'; give 'column'")
        return self

    @property
    def columns(self) -> list[str]:
        """Source columns this spec reads."""
        if self.column is not None:
            return [self.column]
        if self.template is not None:
            return TEMPLATE_FIELD.findall(self.template)
        return []


class MatchRule(Strict):
    """One rule of the ``match_by`` chain: ``id``, ``email`` (contacts) or ``name``."""

    by: Literal["id", "email", "name"]
    column: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"by": data} if isinstance(data, str) else data


class OwnerConfig(Strict):
    """Owner e-mail column → ``owned_by_user_id``."""

    column: str
    owners_file: str | None = None
    on_unknown: Literal["fail", "unowned", "default"] = "fail"
    default: str | None = None

    @model_validator(mode="after")
    def _default_given(self) -> OwnerConfig:
        if self.on_unknown == "default" and not self.default:
            raise ValueError("on_unknown: default needs 'default' (an owner e-mail or user id)")
        return self


class LedgerKey(Strict):
    """The stable source key of the identity ledger (nightly syncs), instead of the match
    value: e.g. a CRM export's contact id, so that an e-mail change is not a new key."""

    column: str
    normalize: Literal["none", "lower", "email", "domain"] = "none"

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"column": data} if isinstance(data, str) else data


class MirrorDeletes(Strict):
    """Soft-delete the records whose keys left the source (nightly syncs; off by default)."""

    enabled: bool = False
    max_count: int | None = Field(default=None, ge=0)
    max_share: float = Field(default=0.10, ge=0, le=1)


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
        return self

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def label(self) -> str:
        return str(self._path) if self._path is not None else f"<mapping {self.object_type}>"

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

    _path: Path | None = PrivateAttr(default=None)

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
