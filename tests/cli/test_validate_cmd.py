"""``recordsync validate PIPELINE``: offline checks, per-step summary, exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from recordsync.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(["validate", *args])
    out = capsys.readouterr()
    code = exc.value.code
    assert isinstance(code, int)
    return code, out.out, out.err


def test_sample_pipeline_is_valid(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([str(ROOT / "pipelines" / "nightly.yaml")], capsys)
    assert code == 0
    assert "1. companies → companies  [ok]" in out
    assert "3. deals → deals  [ok]" in out
    assert "(13 columns)" in out
    assert "3 step(s) ok" in out


def test_scan_with_saved_schema_counts_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from recordsync.sandbox import create_app

    app = create_app(tmp_path / "db.sqlite", api_key="sk_live_cli")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient
    with TestClient(app, headers={"x-api-key": "sk_live_cli"}) as c:
        (tmp_path / "schema.json").write_text(json.dumps(c.get("/api/meta/schema").json()))
        (tmp_path / "users.json").write_text(json.dumps(c.get("/api/meta/users").json()))
    app.state.store.close()
    code, out, _ = run(
        [
            str(ROOT / "pipelines" / "nightly.yaml"),
            "--scan",
            "--schema",
            str(tmp_path / "schema.json"),
            "--users",
            str(tmp_path / "users.json"),
        ],
        capsys,
    )
    assert code == 0
    assert "rows:    501 (491 valid, 9 invalid, 1 duplicate)" in out
    assert "row 12: column 'Email' → field 'email': 'john.doe@' is not a valid email" in out
    # contacts has 10 problem rows: 5 shown, the rest counted; a malformed line says "line" once
    assert "… and 5 more (see `recordsync run --dry-run` for the full report)" in out
    assert out.count("… and ") == 1
    assert "row 303: malformed line: expected 13 cells, found 14" in out or "row 303" not in out
    assert "line 303:" not in out


def test_config_error_in_a_step_exits_2_and_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    shutil.copytree(
        ROOT / "sample_data", tmp_path / "sample_data", ignore=shutil.ignore_patterns("*.parquet")
    )
    (tmp_path / "pipelines").mkdir()
    shutil.copy(ROOT / "pipelines" / "nightly.yaml", tmp_path / "pipelines")
    code, out, err = run([str(tmp_path / "pipelines" / "nightly.yaml")], capsys)
    assert code == 2
    assert "3. deals → deals  [ERROR]" in out
    assert "deals.parquet" in out and "deals.yaml" in out
    assert "1 of 3 step(s) have configuration errors: deals" in err


def test_unknown_key_in_mapping_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m.yaml").write_text(
        "object_type: contacts\nsource: {path: x.csv}\nname: N\nfeilds: {}\n"
    )
    (tmp_path / "p.yaml").write_text("steps: [m.yaml]\n")
    code, _, err = run([str(tmp_path / "p.yaml")], capsys)
    assert code == 2
    assert "m.yaml:4 [feilds]" in err


def test_a_mapping_with_no_key_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "d.csv").write_text("Name,Stage\nA,won\n")
    (tmp_path / "d.yaml").write_text(
        "object_type: deals\nsource: {path: d.csv}\nname: Name\nfields: {stage: Stage}\n"
    )
    (tmp_path / "p.yaml").write_text("steps: [d.yaml]\n")
    code, _, err = run([str(tmp_path / "p.yaml")], capsys)
    assert code == 0
    assert "warning: step 'd'" in err and "every run creates a new deals record" in err


def test_scan_counts_merged_rows_and_names_the_row_they_merge_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "c.csv").write_text(
        "Company,Website\nDavenport LLC,d1.example\nDavenport PLC,d2.example\n", encoding="utf-8"
    )
    (tmp_path / "c.yaml").write_text(
        "object_type: companies\nsource: {path: c.csv}\nname: Company\nmatch_by: [name]\n"
        "fields: {domain: Website}\n",
        encoding="utf-8",
    )
    (tmp_path / "p.yaml").write_text("steps: [c.yaml]\n", encoding="utf-8")
    code, out, _ = run([str(tmp_path / "p.yaml"), "--scan"], capsys)
    assert code == 0  # a scan finds row problems; only a config error is exit 2
    assert "rows:    2 (1 valid, 1 merged)" in out
    assert "row 3: merges with row 2: the service would fold it into that row's record" in out
