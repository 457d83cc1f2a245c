"""The annotated example of docs/mapping.md is a valid mapping for the seed schema."""

from __future__ import annotations

import re
from pathlib import Path

from recordsync.config import load_mapping, load_pipeline
from recordsync.config.models import FieldSpec, MappingConfig
from recordsync.validate import Schema, check_mapping

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "mapping.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```yaml\n(.*?)```", DOC, flags=re.S)


def test_annotated_mapping_example_loads_and_fits_the_seed_schema(
    tmp_path: Path, schema: Schema
) -> None:
    path = tmp_path / "contacts.yaml"
    path.write_text(BLOCKS[0], encoding="utf-8")
    mapping = load_mapping(path)
    assert check_mapping(mapping, schema).slug == "contacts"
    assert len(mapping.fields) == 11  # every contacts field but the owner (owner: block)


def test_every_option_is_documented() -> None:
    for model in (FieldSpec, MappingConfig):
        for name in model.model_fields:
            assert f"`{name}`" in DOC or f"{name}:" in DOC, name


def test_pipeline_example_loads(tmp_path: Path) -> None:
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "configs").mkdir()
    for name in ("companies", "contacts", "deals"):
        (tmp_path / "configs" / f"{name}.yaml").write_text(
            f"object_type: {name}\nsource: {{path: x.csv}}\nname: N\n"
        )
    (pipeline,) = [b for b in BLOCKS if "\nsteps:" in b]  # the pipeline example
    (tmp_path / "pipelines" / "nightly.yaml").write_text(pipeline, encoding="utf-8")
    p = load_pipeline(tmp_path / "pipelines" / "nightly.yaml")
    assert [s.step_name for s in p.steps] == ["companies", "contacts", "deals"]


def test_query_source_example_loads(tmp_path: Path) -> None:
    (block,) = [b for b in BLOCKS if b.startswith("source:\n  query:")]
    path = tmp_path / "m.yaml"
    path.write_text(f"object_type: contacts\nname: first_name\n{block}", encoding="utf-8")
    source = load_mapping(path).source
    assert source.key == ["id"] and source.label == "query:contacts"


def test_every_source_option_has_a_line_in_the_sources_section() -> None:
    from recordsync.config.models import SourceConfig

    section = DOC.split("\n## Sources\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    documented = [row.split("`")[1] for row in rows]
    assert sorted(documented) == sorted(SourceConfig.model_fields), documented
    assert all(row.count(" | ") >= 2 for row in rows)  # what it does, its default
