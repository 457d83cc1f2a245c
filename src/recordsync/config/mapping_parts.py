"""The parts of a mapping config (:class:`recordsync.config.models.MappingConfig`): where
its rows come from (:class:`SourceConfig`), how each value is built (:class:`FieldSpec`), its
match rules, owner, ledger key and mirror deletes; and :class:`Strict`, the base of every
config model (unknown keys are errors). Re-exported by :mod:`.models`."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from recordsync.config.incremental import Incremental, check_change_detection
from recordsync.config.refspec import RefSpec
from recordsync.config.sqlsource import ENV_NAME, has_password, memory_size

TEMPLATE_FIELD = re.compile(r"\{([^{}]+)\}")


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
    memory_limit: str = "128MB"
    """DuckDB: the query's working memory (its sort by key, joins, the diff of
    ``change_detection: database``); beyond it DuckDB spills to a temporary directory."""
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
    null_values: list[str] | None = None
    """Cells that stand for no value in this source (``[NULL, N/A]``): read as blank in every
    column (a cell matches when, trimmed, it is exactly one of them)."""
    header_case: Literal["exact", "insensitive"] = "exact"
    """``insensitive``: the columns the mapping names match header names that differ only in
    case and surrounding spaces (CSV; read so in :mod:`recordsync.read.header_case`)."""
    change_detection: Literal["client", "database"] = "client"
    """``database``: a query source's rows are compared with the last synced ones inside the
    database (PostgreSQL), in a table of schema ``state_schema`` (:mod:`.incremental`)."""
    state_schema: str = "recordsync"
    """The schema recordsync creates and writes in the source database for
    ``change_detection: database``."""
    incremental: Incremental | None = None
    """Read only the rows past the cursor's last acknowledged watermark (:mod:`.incremental`)."""

    _case_names: tuple[str, ...] = PrivateAttr(default=())
    _own_file: bool = PrivateAttr(default=False)
    """A CSV file recordsync wrote itself (``recordsync retry``'s failures, every field quoted
    as RFC 4180 says): a quoted cell spanning lines is taken as it parses, never as a stray
    quote that swallowed rows (:mod:`recordsync.read.swallow`), whatever its lines look like."""

    @property
    def own_file(self) -> bool:
        return self._own_file

    def as_own_file(self) -> SourceConfig:
        """This source, marked as a file recordsync wrote itself (:attr:`own_file`)."""
        copy = self.model_copy()
        copy._own_file = True
        return copy

    @field_validator("delimiter", "quotechar", "escapechar")
    @classmethod
    def _one_char(cls, v: str | None) -> str | None:
        if v is not None and len(v) != 1:
            raise ValueError('must be exactly one character (use "\\t" for tab)')
        return v

    @field_validator("null_values", mode="before")
    @classmethod
    def _tokens(cls, v: Any) -> Any:
        if isinstance(v, list) and any(t is None for t in v):
            raise ValueError(
                'YAML reads an unquoted NULL, null or ~ as no value: quote it, e.g. ["NULL", "N/A"]'
            )
        if isinstance(v, list) and any(isinstance(t, str) and not t.strip() for t in v):
            raise ValueError("a null value must be a non-blank text (blank cells are empty anyway)")
        return v

    @field_validator("memory_limit", mode="before")
    @classmethod
    def _size(cls, v: Any) -> Any:
        return memory_size(v)

    @field_validator("key", mode="before")
    @classmethod
    def _one_key(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _columns_without_header(self) -> SourceConfig:
        if not self.header and not self.columns:
            raise ValueError("'columns' is required when 'header' is false")
        check_change_detection(self)
        if self.query is None:
            sql_only = ("database", "dsn_env", "dsn", "key", "name")
            given = [k for k in sql_only if getattr(self, k) is not None]
            if "memory_limit" in self.model_fields_set:
                given.append("memory_limit")
            if "engine" in self.model_fields_set:
                given.insert(0, "engine")
            if not self.path:
                raise ValueError("give 'path' (a file) or 'query' (SQL)")
            if given:
                raise ValueError(f"{', '.join(given)}: only for a 'query' source")
            return self
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

    @property
    def case_names(self) -> tuple[str, ...]:
        """With ``header_case: insensitive``: the source columns the mapping reads, the
        spellings its header's names are read as (set by the mapping that holds the source)."""
        return self._case_names


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
    nonexistent_time: Literal["invalid", "shift_forward"] = "invalid"
    """A local time the clocks skipped (a daylight-saving gap) in ``timezone``."""
    ambiguous_time: Literal["invalid", "earlier", "later"] = "invalid"
    """A local time the clocks passed twice (the hour repeated when they go back)."""
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
        for option in ("decimal_separator", "thousands_separator"):
            sep = getattr(self, option)
            if sep is not None and (len(sep) != 1 or sep.isdigit() or sep in "+-eE"):
                raise ValueError(f"{option} must be one character, not a digit, sign or e/E")
        resolving = {"nonexistent_time", "ambiguous_time"} & self.model_fields_set
        if resolving and self.timezone is None:
            option = sorted(resolving)[0]
            raise ValueError(f"'{option}' resolves local times of a 'timezone'; give 'timezone'")
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


def check_query_source(src: SourceConfig) -> None:
    """ValueError (reported by the config loader with the file and line) when a query
    source's options do not fit together."""
    if src.path:
        raise ValueError("give 'path' (a file) or 'query' (SQL), not both")
    file_only = [k for k in ("format", "columns") if getattr(src, k) is not None]
    if file_only:
        raise ValueError(f"{', '.join(file_only)}: only for a file source, not a 'query'")
    if not src.query or not src.query.strip():
        raise ValueError("'query' is empty")
    if not src.key:
        raise ValueError(
            "a query source needs 'key': the column(s) that identify a row across runs"
            " (e.g. key: id); its rows are read in that order"
        )
    if src.engine == "duckdb":
        if src.dsn is not None or src.dsn_env is not None:
            raise ValueError("dsn/dsn_env are for engine: postgres (DuckDB takes 'database')")
        return
    if "memory_limit" in src.model_fields_set:
        raise ValueError(
            "'memory_limit' is for engine: duckdb (PostgreSQL's memory is the server's:"
            " work_mem)"
        )
    if src.database is not None:
        raise ValueError("'database' is for engine: duckdb; PostgreSQL takes dsn_env")
    if (src.dsn is None) == (src.dsn_env is None):
        raise ValueError(
            "engine: postgres needs 'dsn_env': the name of the environment variable that holds"
            " the connection string (or 'dsn' without a password)"
        )
    if src.dsn_env is not None and not ENV_NAME.fullmatch(src.dsn_env):
        raise ValueError(
            "'dsn_env' is the NAME of an environment variable (e.g. CRM_DB_DSN), not the"
            " connection string itself"
        )
    if src.dsn is not None and has_password(src.dsn):
        raise ValueError(
            "'dsn' holds a password: never put one in a mapping file. Put the connection"
            " string in an environment variable and name it with dsn_env (or give the"
            " password through PGPASSWORD or ~/.pgpass)"
        )
