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


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, csv: bytes, fields: str) -> None:
    """c.csv and c.yaml (contacts) in ``tmp_path`` as the cwd; no target in the environment."""
    monkeypatch.chdir(tmp_path)
    for var in ("RECORDSYNC_BASE_URL", "RECORDSYNC_API_KEY", "RECORDSYNC_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "c.csv").write_bytes(csv)
    (tmp_path / "c.yaml").write_text(
        "object_type: contacts\nsource: {path: c.csv}\nname: First\nmatch_by: [email]\n"
        f"fields: {fields}\n",
        encoding="utf-8",
    )


def _run_error(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``recordsync run c.yaml --dry-run`` into the embedded sandbox: its exit code and the
    error it ends with (from ``error:`` on)."""
    with pytest.raises(SystemExit) as exc:
        main(["run", "c.yaml", "--dry-run", "--no-state", "--quiet"])
    err = capsys.readouterr().err
    assert "error: " in err, err
    assert isinstance(exc.value.code, int)
    end = err.find("\nreport: ")  # then the report's directory and the verdict, if any
    end = len(err) if end < 0 else end
    return exc.value.code, err[err.index("error: ") + len("error: ") : end].strip()


CP1252 = "Email,First\nada@x.example,Ada\nrenee@x.example,Renée\n".encode("cp1252")


def test_a_source_that_is_not_utf8_is_refused_as_run_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, monkeypatch, CP1252, "{email: Email}")
    run_code, run_error = _run_error(capsys)
    assert run_code == 2
    assert run_error.startswith("c.csv:3 [source.encoding]: not valid UTF-8 text")
    code, out, err = run(["c.yaml"], capsys)
    assert code == 2
    assert "1. c → contacts  [ERROR]" in out
    assert f"   error:   {run_error}" in out  # the same file, line, key, message and hint
    assert "1 of 1 step(s) have configuration errors: c" in err


def test_a_source_read_in_its_own_encoding_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, monkeypatch, CP1252, "{email: Email}")
    (tmp_path / "c.yaml").write_text(
        (tmp_path / "c.yaml").read_text().replace("path: c.csv", "path: c.csv, encoding: cp1252")
    )
    code, out, _ = run(["c.yaml"], capsys)
    assert code == 0, out
    assert "1 step(s) ok" in out


def test_an_unknown_field_is_named_against_the_embedded_sandboxs_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = b"Email,First,Score\nada@x.example,Ada,5\n"
    _project(tmp_path, monkeypatch, csv, "{email: Email, lead_scor: Score}")
    run_code, run_error = _run_error(capsys)
    assert run_code == 2
    code, out, _ = run(["c.yaml"], capsys)
    assert code == 2
    assert "target: the embedded sandbox (no target configured)" in out
    assert "c.yaml:5 [fields.lead_scor]: unknown field 'lead_scor' on contacts" in out
    assert "hint: did you mean 'lead_score'?" in out
    assert f"   error:   {run_error}" in out  # as the run says it


def test_a_real_targets_schema_is_not_guessed_and_validate_says_what_needs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = b"Email,First,Score\nada@x.example,Ada,5\n"
    _project(tmp_path, monkeypatch, csv, "{email: Email, lead_scor: Score}")
    monkeypatch.setenv("RECORDSYNC_BASE_URL", "http://127.0.0.1:9")  # never contacted
    code, out, _ = run(["c.yaml"], capsys)
    assert code == 0  # a field unknown to the seed may exist on the real target
    assert "target: http://127.0.0.1:9 (from RECORDSYNC_BASE_URL)" in out
    assert "its schema is not known offline" in out
    assert "needs the target (not checked offline): object types, fields" in out
    assert "`recordsync run c.yaml --dry-run` checks them and sends nothing" in out
    code, out, _ = run(["c.yaml", "--profile", "sandbox"], capsys)  # the embedded sandbox
    assert code == 2 and "unknown field 'lead_scor'" in out
    assert "`recordsync run c.yaml --profile sandbox --dry-run`" in out


def test_a_custom_sandbox_seed_is_the_schema_checked_against(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, monkeypatch, b"Email,First\nada@x.example,Ada\n", "{email: Email}")
    (tmp_path / "p.yaml").write_text(
        "object_type: probes\nsource: {path: c.csv}\nname: First\nfields: {code: Email}\n",
        encoding="utf-8",
    )
    (tmp_path / "seed.yaml").write_text(
        "object_types:\n"
        "  - {slug: contacts, display_name: Person, plural_display_name: People, fields: []}\n"
        "  - {slug: companies, display_name: Company, plural_display_name: Companies,"
        " fields: []}\n"
        "  - slug: probes\n    display_name: Probe\n    plural_display_name: Probes\n"
        "    fields: [{field_name: code, field_type: text}]\n",
        encoding="utf-8",
    )
    code, out, _ = run(["p.yaml"], capsys)
    assert code == 2 and "unknown object type 'probes'" in out
    code, out, _ = run(["p.yaml", "--sandbox-seed", "seed.yaml"], capsys)
    assert code == 0, out
    assert "checked against its seed seed.yaml's schema and users" in out


@pytest.mark.parametrize(("sep", "written"), [(";", ";"), ("\t", "\\t"), ("|", "|")])
def test_a_header_read_with_the_wrong_delimiter_gets_the_delimiter_to_set(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sep: str,
    written: str,
) -> None:
    csv = sep.join(["Email", "First", "Score"]) + "\n" + sep.join(["ada@x.example", "Ada", "5"])
    _project(tmp_path, monkeypatch, csv.encode() + b"\n", "{email: Email, lead_score: Score}")
    code, out, _ = run(["c.yaml"], capsys)
    assert code == 2
    assert "c.yaml:2 [source.delimiter]: the header of c.csv was read as one column" in out
    assert f'hint: set source: {{delimiter: "{written}"}} in the mapping' in out
    assert "did you mean" not in out
    mapping = (tmp_path / "c.yaml").read_text()
    fixed = mapping.replace("path: c.csv", f'path: c.csv, delimiter: "{written}"')
    (tmp_path / "c.yaml").write_text(fixed)  # the hint as given fixes it
    code, out, _ = run(["c.yaml"], capsys)
    assert code == 0, out


def test_header_names_that_fold_together_are_refused_by_validate_and_run_alike(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``header_case: insensitive`` over a header with 'Name' and 'NAME': the mapping's
    error (file, line, key), exit 2, before the target is contacted or anything is sent."""
    (project / "c.csv").write_text("Name,NAME,Email\nA,B,a@x.example\n", encoding="utf-8")
    (project / "c.yaml").write_text(
        "object_type: contacts\nsource: {path: c.csv, header_case: insensitive}\n"
        "name: name\nmatch_by: email\nfields: {email: email}\n",
        encoding="utf-8",
    )
    error = (
        "c.yaml:2 [source.header_case]: header names 'Name', 'NAME' differ only in case: with"
        " header_case: insensitive, column 'name' would be either\n"
        "  hint: rename one in the file, or use header_case: exact"
    )
    code, out, err = run(["c.yaml"], capsys)
    assert code == 2
    assert "1. c → contacts  [ERROR]" in out and f"error:   {error}" in out
    assert "1 of 1 step(s) have configuration errors: c" in err
    for flags in (["--dry-run"], []):
        with pytest.raises(SystemExit) as exc:
            main(["run", "c.yaml", "--quiet", *flags])
        assert exc.value.code == 2
        assert f"error: {error}" in capsys.readouterr().err
    assert not (project / "reports").exists()  # refused before a run (and a report) began
