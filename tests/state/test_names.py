"""The name a pipeline's state is kept under: too long a name is a config error naming the
key and the limit, before any file is made from it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from recordsync.config import load_pipeline
from recordsync.config.models import MAX_PIPELINE_NAME
from recordsync.core.errors import EXIT_CONFIG, ConfigError, exit_code_for
from recordsync.state.names import state_name, state_name_of

MAPPING = "object_type: contacts\nsource: {path: people.csv}\nname: Name\n"
LIMIT = f"at most {MAX_PIPELINE_NAME} characters"


def test_a_name_at_the_limit_is_fine_one_over_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "people.yaml").write_text(MAPPING)
    path = tmp_path / "p.yaml"
    path.write_text(f"name: {'n' * MAX_PIPELINE_NAME}\nsteps: [people.yaml]\n")
    assert state_name(load_pipeline(path).name, path) == "n" * MAX_PIPELINE_NAME
    path.write_text(f"name: {'n' * (MAX_PIPELINE_NAME + 1)}\nsteps: [people.yaml]\n")
    with pytest.raises(ConfigError, match=LIMIT) as exc:
        load_pipeline(path)
    assert (exc.value.file, exc.value.line, exc.value.key) == (str(path), 1, "name")
    assert f"this one has {MAX_PIPELINE_NAME + 1}" in str(exc.value)


def test_a_file_name_too_long_to_be_the_state_name(tmp_path: Path) -> None:
    path = tmp_path / f"{'m' * 240}.yaml"
    path.write_text(MAPPING)
    with pytest.raises(ConfigError, match=LIMIT) as exc:
        load_pipeline(path)  # validate and run load it so: both refuse it
    assert exc.value.file == str(path)
    with pytest.raises(ConfigError, match=LIMIT):
        state_name(None, path)
    assert exc.value.hint is not None and "`name:`" in exc.value.hint
    assert state_name("short", path) == "short"  # a pipeline naming it may run it


def test_state_commands_refuse_too_long_a_name() -> None:
    with pytest.raises(ConfigError, match=LIMIT):
        state_name_of("x" * 300)
    assert state_name_of("x" * MAX_PIPELINE_NAME) == "x" * MAX_PIPELINE_NAME


def test_run_with_too_long_a_name_exits_2_naming_the_key(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    (project / "people.yaml").write_text(MAPPING)
    (project / "people.csv").write_text("Name\nAnn\n")
    (project / "long.yaml").write_text(f"name: {'n' * 300}\nsteps: [people.yaml]\n")
    assert cli("run", "long.yaml", "--quiet") == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "long.yaml:1 [name]" in err and LIMIT in err
    assert not (project / ".recordsync").exists()  # refused before any state was opened


def test_the_error_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as exc:
        state_name(None, f"{'m' * 201}.yaml")
    assert exit_code_for(exc.value) == EXIT_CONFIG
