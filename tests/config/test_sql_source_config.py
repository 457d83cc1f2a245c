"""A mapping's source may be a SQL query: its options, and never a password in the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.config import load_mapping
from recordsync.config.sqlsource import has_password, redact
from recordsync.core.errors import ConfigError, exit_code_for

HEAD = "object_type: contacts\nname: {column: name}\n"


def _load(tmp_path: Path, source: str) -> object:
    p = tmp_path / "m.yaml"
    p.write_text(HEAD + "source:\n" + source, encoding="utf-8")
    return load_mapping(p)


def _error(tmp_path: Path, source: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, source)
    assert exit_code_for(info.value) == 2
    return info.value


def test_a_duckdb_query_with_one_key_column_is_the_ledger_key(tmp_path: Path) -> None:
    m = _load(tmp_path, "  query: SELECT * FROM 'people.parquet'\n  key: id\n  name: people\n")
    src = m.source  # type: ignore[attr-defined]
    assert src.kind == "sql" and src.engine == "duckdb" and src.key == ["id"]
    assert src.label == "query:people"
    assert m.ledger_key is not None and m.ledger_key.column == "id"  # type: ignore[attr-defined]


def test_a_composite_key_or_a_given_ledger_key_is_left_alone(tmp_path: Path) -> None:
    m = _load(tmp_path, "  query: SELECT 1\n  key: [a, b]\n")
    assert m.ledger_key is None  # type: ignore[attr-defined]
    assert m.source.label == "query:duckdb"  # type: ignore[attr-defined]
    p = tmp_path / "l.yaml"
    p.write_text(
        HEAD + "source: {query: SELECT 1, key: id}\nledger_key: {column: email, normalize: email}\n"
    )
    assert load_mapping(p).ledger_key.column == "email"  # type: ignore[union-attr]


def test_a_query_needs_a_key(tmp_path: Path) -> None:
    err = _error(tmp_path, "  query: SELECT 1 AS id\n")
    assert "needs 'key'" in str(err) and "m.yaml" in str(err)


def test_path_and_query_exclude_each_other(tmp_path: Path) -> None:
    assert "not both" in str(_error(tmp_path, "  path: a.csv\n  query: SELECT 1\n  key: id\n"))
    assert "give 'path'" in str(_error(tmp_path, "  encoding: utf-8\n"))
    assert "only for a 'query'" in str(_error(tmp_path, "  path: a.csv\n  key: id\n"))


def test_postgres_needs_the_name_of_an_environment_variable(tmp_path: Path) -> None:
    base = "  query: SELECT 1\n  key: id\n  engine: postgres\n"
    assert "dsn_env" in str(_error(tmp_path, base))
    err = _error(tmp_path, base + "  dsn_env: postgresql://app@db/crm\n")
    assert "NAME of an environment variable" in str(err)
    m = _load(tmp_path, base + "  dsn_env: CRM_DB_DSN\n")
    assert m.source.dsn_env == "CRM_DB_DSN"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://app:hunter2secret@db:5432/crm",
        "postgresql://app@db/crm?password=hunter2secret",
        "host=db dbname=crm user=app password=hunter2secret",
        "host=db PASSWORD = 'hunter2secret' dbname=crm",
    ],
)
def test_a_dsn_with_a_password_in_the_file_is_refused_without_showing_it(
    tmp_path: Path, dsn: str
) -> None:
    err = _error(tmp_path, f'  query: SELECT 1\n  key: id\n  engine: postgres\n  dsn: "{dsn}"\n')
    assert "holds a password" in str(err) and "dsn_env" in str(err)
    assert "hunter2secret" not in str(err)


def test_a_dsn_without_a_password_is_accepted(tmp_path: Path) -> None:
    source = "  query: SELECT 1\n  key: id\n  engine: postgres\n  dsn: postgresql://app@db/crm\n"
    assert _load(tmp_path, source).source.dsn == "postgresql://app@db/crm"  # type: ignore[attr-defined]


def test_engine_options_do_not_mix(tmp_path: Path) -> None:
    assert "engine: postgres" in str(
        _error(tmp_path, "  query: SELECT 1\n  key: id\n  dsn_env: X\n")
    )
    assert "engine: duckdb" in str(
        _error(tmp_path, "  query: SELECT 1\n  key: id\n  engine: postgres\n  dsn_env: X\n"
               "  database: x.duckdb\n")
    )
    assert "format" in str(_error(tmp_path, "  query: SELECT 1\n  key: id\n  format: csv\n"))


def test_duckdb_memory_limit_is_a_size_given_to_a_duckdb_query_only(tmp_path: Path) -> None:
    q = "  query: SELECT 1\n  key: id\n"
    assert _load(tmp_path, q).source.memory_limit == "128MB"  # type: ignore[attr-defined]
    got = _load(tmp_path, q + "  memory_limit: 1.5 gb\n").source  # type: ignore[attr-defined]
    assert got.memory_limit == "1.5GB"
    assert _load(tmp_path, q + "  memory_limit: 512MiB\n").source.memory_limit == "512MiB"  # type: ignore[attr-defined]
    for bad, says in (("512", "not a size"), ("lots", "not a size"), ("8MB", "at least 16MB")):
        err = str(_error(tmp_path, q + f"  memory_limit: {bad}\n"))
        assert "m.yaml" in err and "source.memory_limit" in err and says in err, err
    pg = "  engine: postgres\n  dsn_env: X\n  memory_limit: 1GB\n"
    assert "'memory_limit' is for engine: duckdb" in str(_error(tmp_path, q + pg))
    err = str(_error(tmp_path, "  path: a.csv\n  memory_limit: 1GB\n"))
    assert "memory_limit: only for a 'query' source" in err


_secret = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=6, max_size=20)


@given(_secret)
def test_redact_hides_the_password_of_a_uri_or_keyword_dsn(secret: str) -> None:
    uri = f"postgresql://app:{secret}@db/crm"
    kw = f"host=db user=app password={secret} dbname=crm"
    for dsn in (uri, kw):
        assert has_password(dsn)
        assert secret not in redact(f"connection to {dsn} failed", dsn)
