"""The one YAML loader: syntax errors, duplicate keys and alias bombs name the file and line,
before anything is expanded."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.config.support import BOMB, alias_bomb

from recordsync.cli import main
from recordsync.config import load_mapping, load_pipeline
from recordsync.config.yamlmarks import MAX_ALIAS_EXPANSION, parse_yaml
from recordsync.core.errors import EXIT_CONFIG, ConfigError, exit_code_for
from recordsync.resolve import load_owners_file

MAPPING = """\
object_type: contacts
source: {path: people.csv}
name: Name
fields:
  email: Email
  job_title:
    value:
"""


def bomb_mapping(tmp_path: Path) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(MAPPING + alias_bomb(indent="      "))
    return path


def test_an_alias_bomb_in_a_value_is_refused_naming_file_and_line(tmp_path: Path) -> None:
    path = bomb_mapping(tmp_path)
    with pytest.raises(ConfigError, match="refused as an alias bomb") as exc:
        load_mapping(path)
    assert exc.value.file == str(path)
    assert exc.value.line is not None and 8 <= exc.value.line <= 16  # within the bomb's lines
    assert f"more than {MAX_ALIAS_EXPANSION:,} characters" in str(exc.value)
    assert exit_code_for(exc.value) == EXIT_CONFIG


def test_validate_refuses_the_bomb_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bomb_mapping(tmp_path)
    (tmp_path / "people.csv").write_text("Name,Email\nAnn,ann@example.com\n")
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(path)])
    assert exc.value.code == EXIT_CONFIG
    assert "refused as an alias bomb" in capsys.readouterr().err


def test_a_bomb_of_few_aliases_of_a_long_string_is_refused(tmp_path: Path) -> None:
    text = f"a: &a {'x' * 100_000}\nb: [{', '.join(['*a'] * 11)}]\n"
    with pytest.raises(ConfigError, match="alias bomb") as exc:
        parse_yaml(text, "long.yaml")
    assert (exc.value.file, exc.value.line) == ("long.yaml", 2)


def test_a_bomb_in_a_pipeline_file(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("steps: [m.yaml]\ndescription:\n" + alias_bomb(indent="  "))
    with pytest.raises(ConfigError, match="alias bomb"):
        load_pipeline(path)


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    with pytest.raises(ConfigError, match="repeats the anchor it is inside of") as exc:
        parse_yaml("ok: 1\nloop: &a {self: *a}\n", "loop.yaml")
    assert exc.value.line == 2


def test_sharing_options_through_anchors_and_merge_keys_still_works(tmp_path: Path) -> None:
    text = MAPPING.replace("    value:\n", "    column: Title\n") + (
        "  phone: &opts {column: Phone, trim: true}\n"
        "  website: {<<: *opts, column: Site}\n"
        "  tags: &tags {column: Tags, split: ';'}\n"
        "  industry: *tags\n"
    )
    path = tmp_path / "m.yaml"
    path.write_text(text)
    mapping = load_mapping(path)
    assert mapping.fields["website"].column == "Site"
    assert mapping.fields["industry"].split == ";"


def test_owners_files_go_through_the_same_loader(tmp_path: Path) -> None:
    bomb = tmp_path / "owners.yaml"
    bomb.write_text(BOMB)
    with pytest.raises(ConfigError, match="alias bomb") as exc:
        load_owners_file(bomb)
    assert exc.value.file == str(bomb)
    broken = tmp_path / "broken.yaml"
    broken.write_text("ada@x.example: [1\n")
    with pytest.raises(ConfigError, match="invalid YAML") as exc:  # was an unexpected error
        load_owners_file(broken)
    assert exc.value.line is not None


def test_a_key_twice_in_an_owners_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "owners.yaml"
    path.write_text("ada@x.example: u1\nben@x.example: u2\nada@x.example: u3\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'ada@x\.example'") as exc:
        load_owners_file(path)  # YAML alone would give Ada's rows to u3, silently
    assert (exc.value.file, exc.value.line) == (str(path), 3)
