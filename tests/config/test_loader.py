"""Mapping and pipeline configs: strict models; errors name file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordsync.config import load_mapping, load_pipeline
from recordsync.core.errors import ConfigError, exit_code_for

ROOT = Path(__file__).resolve().parents[2]

MAPPING = """\
object_type: contacts
source:
  path: people.csv
name:
  template: "{first} {last}"
match_by: [email, name]
fields:
  email: Email
  lead_score:
    column: Score
    decimal_separator: ","
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_valid_mapping_loads_with_shorthands(tmp_path: Path) -> None:
    m = load_mapping(write(tmp_path, "m.yaml", MAPPING))
    assert m.object_type == "contacts"
    assert m.fields["email"].column == "Email"
    assert [r.by for r in m.match_by] == ["email", "name"]
    assert m.source.kind == "csv"
    assert m.source_columns() == ["first", "last", "Email", "Score"]


def test_unknown_key_names_file_line_and_key(tmp_path: Path) -> None:
    text = MAPPING.replace("    decimal_separator", "    decimal_seperator")
    with pytest.raises(ConfigError) as err:
        load_mapping(write(tmp_path, "m.yaml", text))
    e = err.value
    assert e.line == 11
    assert e.key == "fields.lead_score.decimal_seperator"
    assert str(e).startswith(f"{tmp_path / 'm.yaml'}:11 [fields.lead_score.decimal_seperator]")
    assert "unknown key" in str(e)
    assert exit_code_for(e) == 2


@pytest.mark.parametrize(
    ("name", "text", "key", "suggestion"),
    [
        (
            "m.yaml",
            MAPPING.replace("    decimal_separator", "    decimal_seperator"),
            "fields.lead_score.decimal_seperator",
            "decimal_separator",
        ),
        (
            "m.yaml",
            MAPPING.replace("  path: people.csv", "  path: people.csv\n  encodng: cp1252"),
            "source.encodng",
            "encoding",
        ),
        (
            "m.yaml",
            MAPPING.replace("match_by: [email, name]", "match_by: [{by: email, colum: E}]"),
            "match_by.0.colum",
            "column",
        ),
        ("p.yaml", "steps: [m.yaml]\nreprot: {directory: out}\n", "reprot", "report"),
        (
            "p.yaml",
            "steps: [m.yaml]\nsend: {circuit_breaker: {max_create: 5}}\n",
            "send.circuit_breaker.max_create",
            "max_creates",
        ),
    ],
)
def test_unknown_key_suggests_the_closest_allowed_key_at_its_level(
    tmp_path: Path, name: str, text: str, key: str, suggestion: str
) -> None:
    write(tmp_path, "m.yaml", MAPPING)
    load = load_pipeline if name == "p.yaml" else load_mapping
    with pytest.raises(ConfigError) as err:
        load(write(tmp_path, name, text))
    assert err.value.key == key
    assert f"[{key}]: unknown key: did you mean '{suggestion}'?" in str(err.value)


def test_unknown_key_far_from_every_allowed_key_suggests_nothing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_mapping(write(tmp_path, "m.yaml", MAPPING + "xyzzy: 1\n"))
    assert "unknown key" in str(err.value) and "did you mean" not in str(err.value)


def test_runtime_settings_are_refused_in_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_mapping(write(tmp_path, "m.yaml", MAPPING + "api_key: sk_live_x\n"))
    assert err.value.key == "api_key" and err.value.line == 12
    assert "sk_live_x" not in str(err.value)
    assert "runtime setting" in str(err.value)


def test_field_needs_exactly_one_source(tmp_path: Path) -> None:
    text = MAPPING.replace("  email: Email", "  email:\n    column: Email\n    value: x@y.z")
    with pytest.raises(ConfigError, match="exactly one of") as err:
        load_mapping(write(tmp_path, "m.yaml", text))
    assert err.value.line == 8  # the "email:" key


def test_bad_timezone_and_yaml_syntax(tmp_path: Path) -> None:
    text = MAPPING + "  signed_up_at:\n    column: S\n    timezone: Mars/Olympus\n"
    with pytest.raises(ConfigError, match="unknown timezone 'Mars/Olympus'"):
        load_mapping(write(tmp_path, "m.yaml", text))
    with pytest.raises(ConfigError) as err:
        load_mapping(write(tmp_path, "bad.yaml", "object_type: [contacts\nname: x\n"))
    assert err.value.line is not None and "invalid YAML" in str(err.value)


def test_owner_default_policy_needs_a_default(tmp_path: Path) -> None:
    text = MAPPING + "owner:\n  column: Owner\n  on_unknown: default\n"
    with pytest.raises(ConfigError, match="needs 'default'") as err:
        load_mapping(write(tmp_path, "m.yaml", text))
    assert err.value.line == 12


def test_header_false_needs_columns(tmp_path: Path) -> None:
    text = MAPPING.replace("  path: people.csv", "  path: people.csv\n  header: false")
    with pytest.raises(ConfigError, match="'columns' is required"):
        load_mapping(write(tmp_path, "m.yaml", text))


def test_match_by_id_needs_a_column(tmp_path: Path) -> None:
    text = MAPPING.replace("match_by: [email, name]", "match_by: id")
    with pytest.raises(ConfigError, match="needs a 'column'"):
        load_mapping(write(tmp_path, "m.yaml", text))


def test_missing_mapping_file() -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_mapping("/nonexistent/m.yaml")


def test_sample_pipeline_loads_in_order() -> None:
    p = load_pipeline(ROOT / "pipelines" / "nightly.yaml")
    assert [s.step_name for s in p.steps] == ["companies", "contacts", "deals"]
    assert [s.config.object_type for s in p.steps] == ["companies", "contacts", "deals"]
    assert p.steps[1].base_dir == ROOT / "configs"
    assert p.send.chunk_size == 100 and p.send.circuit_breaker.max_failure_rate == 0.2
    assert p.target == "sandbox"


def test_pipeline_chunk_size_above_100_names_the_line(tmp_path: Path) -> None:
    write(tmp_path, "m.yaml", MAPPING)
    text = "steps:\n  - m.yaml\nsend:\n  chunk_size: 250\n"
    with pytest.raises(ConfigError) as err:
        load_pipeline(write(tmp_path, "p.yaml", text))
    assert err.value.line == 4 and err.value.key == "send.chunk_size"
    assert "100" in str(err.value)


def test_pipeline_step_file_missing_and_duplicate_names(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="mapping file not found") as err:
        load_pipeline(write(tmp_path, "p.yaml", "steps:\n  - nope.yaml\n"))
    assert err.value.line == 2
    write(tmp_path, "m.yaml", MAPPING)
    with pytest.raises(ConfigError, match="unique"):
        load_pipeline(write(tmp_path, "p2.yaml", "steps: [m.yaml, m.yaml]\n"))


def test_unknown_key_that_could_be_either_of_two_keys_suggests_neither(tmp_path: Path) -> None:
    """``format`` is as close to ``date_format`` as to ``datetime_format``: no guess."""
    text = MAPPING.replace("fields:\n", "fields:\n  when: {column: When, format: '%d/%m/%Y'}\n", 1)
    with pytest.raises(ConfigError) as err:
        load_mapping(write(tmp_path, "m.yaml", text))
    assert err.value.key == "fields.when.format"
    assert "unknown key" in str(err.value) and "did you mean" not in str(err.value)


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        (MAPPING + "match_by: [name]\n", 12, "match_by"),
        (MAPPING.replace("Score\n", "Score\n    column: Other\n"), 11, "column"),
    ],
)
def test_duplicate_yaml_keys_are_a_config_error(
    tmp_path: Path, text: str, line: int, key: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load_mapping(write(tmp_path, "m.yaml", text))
    e = err.value
    assert (e.file, e.line, e.key) == (str(tmp_path / "m.yaml"), line, key)
    assert "duplicate key" in str(e) and exit_code_for(e) == 2


def test_duplicate_key_in_a_pipeline_file(tmp_path: Path) -> None:
    write(tmp_path, "m.yaml", MAPPING)
    p = write(tmp_path, "p.yaml", "name: a\nsteps: [m.yaml]\nname: b\n")
    with pytest.raises(ConfigError) as err:
        load_pipeline(p)
    assert (err.value.line, err.value.key) == (3, "name")


@pytest.mark.parametrize(
    ("text", "keep", "expected"),
    [
        ("", "last", False),
        ("duplicates: first\n", "first", False),
        ("duplicates: {keep: first, expected: true}\n", "first", True),
        ("duplicates: {expected: true}\n", "last", True),
    ],
)
def test_duplicates_take_a_policy_or_a_block(
    tmp_path: Path, text: str, keep: str, expected: bool
) -> None:
    m = load_mapping(write(tmp_path, "m.yaml", MAPPING + text))
    assert (m.duplicates, m.duplicates_expected, m.merges) == (keep, expected, "hold")


def test_a_wrong_duplicates_block_or_merges_value_is_a_config_error(tmp_path: Path) -> None:
    for text in ("duplicates: {keep: last, expect: true}\n", "merges: allowed\n"):
        with pytest.raises(ConfigError) as err:
            load_mapping(write(tmp_path, "m.yaml", MAPPING + text))
        assert exit_code_for(err.value) == 2
    m = load_mapping(write(tmp_path, "m.yaml", MAPPING + "merges: expected\n"))
    assert m.merges == "expected"


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("thousands_separator", "'..'", "thousands_separator must be one character"),
        ("decimal_separator", "'5'", "decimal_separator must be one character, not a digit"),
        ("thousands_separator", "e", "thousands_separator must be one character, not a digit"),
        ("ambiguous_time", "earlier", "'ambiguous_time' resolves local times of a 'timezone'"),
        ("nonexistent_time", "later", "Input should be 'invalid' or 'shift_forward'"),
    ],
)
def test_number_and_local_time_options_are_checked(
    tmp_path: Path, option: str, value: str, message: str
) -> None:
    text = MAPPING.replace('    decimal_separator: ","\n', f"    {option}: {value}\n")
    with pytest.raises(ConfigError, match=message) as exc:
        load_mapping(write(tmp_path, "m.yaml", text))
    assert exc.value.file is not None and exc.value.key is not None
    assert exc.value.key.startswith("fields.lead_score")
