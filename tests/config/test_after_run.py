"""``after_run:`` and ``verify:`` in pipeline and mapping files: defaults, overrides, and
errors that name the file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordsync.config import load_pipeline
from recordsync.config.after_run import VerifySettings
from recordsync.core.errors import ConfigError

MAPPING = "object_type: contacts\nsource: {path: people.csv}\nname: Name\n"


def pipeline(tmp_path: Path, extra: str, mapping_extra: str = "") -> Path:
    (tmp_path / "people.csv").write_text("Name\nAda\n", encoding="utf-8")
    (tmp_path / "contacts.yaml").write_text(MAPPING + mapping_extra, encoding="utf-8")
    path = tmp_path / "pipe.yaml"
    path.write_text("name: p\nsteps: [contacts.yaml]\n" + extra, encoding="utf-8")
    return path


def test_defaults_verify_on_and_no_skill(tmp_path: Path) -> None:
    p = load_pipeline(pipeline(tmp_path, ""))
    assert p.verify == VerifySettings(enabled=True, sample=10, max_mismatch=0)
    assert p.after_run.skill is None
    assert p.steps[0].config.verify is None


def test_a_skill_and_its_outcomes(tmp_path: Path) -> None:
    text = "after_run:\n  skill: {id: 00000000-0000-4000-8000-00000000000A, when: [always]}\n"
    skill = load_pipeline(pipeline(tmp_path, text)).after_run.skill
    assert skill is not None and skill.id == "00000000-0000-4000-8000-00000000000a"
    assert skill.when == ["always"]
    default = "after_run:\n  skill: {id: 00000000-0000-4000-8000-000000000001}\n"
    skill = load_pipeline(pipeline(tmp_path, default)).after_run.skill
    assert skill is not None and skill.when == ["failed", "rows_not_ok"]


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        (
            "after_run:\n  skill: {id: 00000000-0000-4000-8000-000000000001, when: [failure]}\n",
            "after_run.skill.when.0",
            "'failed', 'rows_not_ok' or 'always'",
        ),
        ("after_run:\n  skill: {id: my-skill}\n", "after_run.skill.id", "skill ids are UUIDs"),
        ("after_run:\n  skill: {id: 12}\n", "after_run.skill.id", "as a string"),
        (
            "after_run:\n  skill: {id: 00000000-0000-4000-8000-000000000001, when: []}\n",
            "after_run.skill.when",
            "at least 1",
        ),
        ("after_run:\n  skil: {id: x}\n", "after_run.skil", "skill"),
        ("verify: {sample: -1}\n", "verify.sample", "greater than or equal to 0"),
        ("verify: {max_mismatch: many}\n", "verify.max_mismatch", "integer"),
    ],
)
def test_errors_name_the_key(tmp_path: Path, text: str, key: str, words: str) -> None:
    path = pipeline(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_pipeline(path)
    assert caught.value.key == key, str(caught.value)
    assert words in str(caught.value) and str(path) in str(caught.value)


def test_a_mapping_overrides_the_pipelines_verify(tmp_path: Path) -> None:
    path = pipeline(tmp_path, "verify: {sample: 5, max_mismatch: 2}\n", "verify: {sample: 50}\n")
    p = load_pipeline(path)
    own = p.steps[0].config.verify
    assert own is not None
    assert own.over(p.verify) == VerifySettings(enabled=True, sample=50, max_mismatch=2)
    bad = pipeline(tmp_path, "", "verify: {sampel: 50}\n")
    with pytest.raises(ConfigError) as caught:
        load_pipeline(bad)
    assert caught.value.key == "verify.sampel" and "contacts.yaml" in str(caught.value)
