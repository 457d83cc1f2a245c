"""``recordsync init`` and ``import``: a mapping inferred, reviewed, dry-run, run, repeated."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

CORPUS = Path(__file__).resolve().parents[1] / "data" / "init_corpus"
Cli = Callable[..., int]


def reports(root: Path) -> list[Path]:
    return sorted(p for p in (root / "reports").iterdir() if p.is_dir())


def summary_of(report: Path) -> dict[str, Any]:
    return dict(json.loads((report / "summary.json").read_text()))


def test_init_writes_a_commented_mapping_dry_runs_it_and_never_overwrites(
    project: Path, cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(CORPUS / "hubspot_contacts.csv", project / "hubspot.csv")
    code = cli("init", "hubspot.csv", "--type", "contacts", "--pipeline", "pipelines/hub.yaml")
    out, err = capsys.readouterr()
    assert code == 0, err  # every row of the export would be sent as it is
    text = (project / "hubspot.yaml").read_text()
    mapping = yaml.safe_load(text)
    assert mapping["object_type"] == "contacts" and mapping["source"]["path"] == "hubspot.csv"
    assert mapping["name"] == {"template": "{First Name} {Last Name}"}
    assert mapping["fields"]["email"] == "Email" and mapping["match_by"] == ["email"]
    assert mapping["fields"]["signed_up_at"]["datetime_format"] == "%m/%d/%Y"
    assert mapping["owner"]["column"] == "Contact owner"
    assert "email: \"Email\"   # header 'Email' is the field's name" in text
    assert mapping["ledger_key"] == "Record ID"  # the export's own key: a re-import updates
    assert "#   'Original Source': no field matches its name" in text
    assert "wrote hubspot.yaml: 9 column(s) mapped, 1 not mapped" in err
    assert "  not mapped: 'Original Source': no field matches its name" in err  # named
    assert "(dry run): hubspot → " in out  # the dry run's summary
    summary = json.loads((reports(project)[0] / "summary.json").read_text())
    assert summary["dry_run"] and summary["totals"]["rows_read"] == 24
    # the one-step pipeline runs the same mapping
    assert cli("run", "pipelines/hub.yaml", "--dry-run", "-q") == 0
    before = text
    capsys.readouterr()
    assert cli("init", "hubspot.csv", "--type", "contacts") == 2
    assert "hubspot.yaml exists; nothing was written" in capsys.readouterr().err
    assert (project / "hubspot.yaml").read_text() == before
    assert cli("init", "hubspot.csv", "--type", "contacts", "--force", "-q") == 0


def test_init_names_the_required_fields_no_column_fills_and_exits_2(
    project: Path, cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "deals.csv").write_text("Deal Name,Amount\nBig one,100\n", encoding="utf-8")
    assert cli("init", "deals.csv", "--type", "deal", "-q") == 2
    err = capsys.readouterr().err
    assert "required, not filled by any column: stage" in err
    assert "# REQUIRED, not filled by any column (map them before a run): stage" in (
        project / "deals.yaml"
    ).read_text()
    assert cli("init", "deals.csv", "--type", "dealz", "-o", "x.yaml") == 2
    assert "unknown object type 'dealz'" in capsys.readouterr().err


def test_import_sends_after_yes_keeps_the_mapping_and_repeats_it(
    project: Path, cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(CORPUS / "crm_companies.csv", project / "crm.csv")
    assert cli("import", "crm.csv", "--type", "companies", "--yes", "-q") == 0
    err = capsys.readouterr().err
    runs = {d: json.loads((d / "summary.json").read_text()) for d in reports(project)}
    assert sorted(s["dry_run"] for s in runs.values()) == [False, True]
    real = next(d for d, s in runs.items() if not s["dry_run"])
    assert runs[real]["totals"]["created"] == 24
    kept = real.relative_to(project) / "crm.yaml"
    assert f"mapping kept: {kept} (repeat with `recordsync run {kept}`)" in err
    assert yaml.safe_load(kept.read_text())["source"]["path"] == "../../crm.csv"
    assert runs[real]["pipeline_file"] == str(kept.resolve())  # what a retry loads
    assert cli("run", str(kept), "-q") == 0  # the same import again: nothing new
    (again,) = [s for d in reports(project) if d not in runs for s in [summary_of(d)]]
    assert again["totals"]["created"] == 0 and again["totals"]["rows_read"] == 24


def test_import_not_confirmed_sends_nothing(
    project: Path, cli: Cli, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(CORPUS / "deals_export.csv", project / "d.csv")
    # its Company column refers to companies: asked first (yes), then whether to send (no)
    monkeypatch.setattr("sys.stdin", io.StringIO("y\nn\n"))
    assert cli("import", "d.csv", "--type", "deals", "-q") == 3
    err = capsys.readouterr().err
    assert "Import without company_id?" in err
    assert "Send 24 of 24 rows to embedded-sandbox:" in err
    assert "import not confirmed: nothing was sent" in err
    assert len(reports(project)) == 1  # the dry run only
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # a script without --yes
    assert cli("import", "d.csv", "--type", "deals", "--allow-unmapped", "-q") == 3
    assert "hint: --yes skips asking" in capsys.readouterr().err


def test_import_names_each_left_out_column_and_refuses_a_reference_it_cannot_fill(
    project: Path, cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "people.csv").write_text(
        "FIRSNAME,LASTNAME,EMAIL,Related Company,PHONE1,Fax\n"
        "Ann,Lee,ann@x.example,Acme,+1 555 0100 123,NULL\n"
        "Bob,Moss,bob@y.example,Globex,NULL,NULL\n"
        "Cy,Ng,cy@z.example,Acme,+1 555 0100 456,030-12\n",
        encoding="utf-8",
    )
    assert cli("import", "people.csv", "--type", "contacts", "--yes", "-q") == 2
    err = capsys.readouterr().err
    assert "  not mapped: 'Related Company': a reference to companies (company_id" in err
    assert "  not mapped: 'Fax': no field matches its name" in err
    assert "column 'Related Company' refers to companies (company_id)" in err
    assert "nothing was sent" in err and "--allow-unmapped to import without company_id" in err
    assert not (project / "reports").exists()  # refused before the dry run: nothing sent
    kept = (project / ".recordsync" / "imports" / "people.yaml").read_text()
    assert '  # company_id:\n  #   column: "Related Company"' in kept  # the fix, written out
    assert 'null_values: ["NULL"]' in kept
    # the same import, allowed: every row sent, the NULL phones left blank (not invalid)
    assert cli("import", "people.csv", "--type", "contacts", "--yes", "--allow-unmapped") == 0
    err = capsys.readouterr().err
    assert "imported without it (--allow-unmapped)" in err
    real = next(d for d in reports(project) if not summary_of(d)["dry_run"])
    assert summary_of(real)["totals"]["created"] == 3


def test_fractional_date_times_import_without_an_edit(project: Path, cli: Cli) -> None:
    (project / "f.csv").write_text(
        "Name,Email,Created Date,Last Contacted\n"
        "Ann,ann@x.example,2006-02-14 22:04:36.000,1996-07-04 00:00:00.000\n"
        "Bob,bob@y.example,2006-02-15 04:57:20.120,1996-07-05 00:00:00.000\n",
        encoding="utf-8",
    )
    assert cli("import", "f.csv", "--type", "contacts", "--yes", "-q") == 0
    fields = yaml.safe_load((project / ".recordsync" / "imports" / "f.yaml").read_text())["fields"]
    assert fields["signed_up_at"]["datetime_format"] == "%Y-%m-%d %H:%M:%S.%f"
    assert fields["last_contacted"]["date_format"] == "%Y-%m-%d %H:%M:%S.%f"  # all at midnight
    real = next(d for d in reports(project) if not summary_of(d)["dry_run"])
    assert summary_of(real)["totals"]["created"] == 2


def test_the_written_reference_runs_once_its_step_comes_first(
    project: Path, cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "firms.csv").write_text(
        "id,Company Name,Website\n7,Acme,https://acme.example\n9,Globex,globex.example\n",
        encoding="utf-8",
    )
    (project / "people.csv").write_text(
        "Name,Email,Company\nAnn,ann@x.example,Acme\nBob,bob@y.example,globex\n",
        encoding="utf-8",
    )
    assert cli("init", "firms.csv", "--type", "companies", "-o", "firms.yaml", "-q") == 0
    assert cli("init", "people.csv", "--type", "contacts", "-o", "people.yaml", "-q") == 0
    assert 'ledger_key: "id"' in (project / "firms.yaml").read_text()  # what a ref finds
    text = (project / "people.yaml").read_text()
    assert "fields:" in text and "#   ref: {step: companies, by: name}" in text
    lines = text.splitlines()
    start = lines.index("  # company_id:")
    lines[start : start + 3] = [ln.replace("  # ", "  ", 1) for ln in lines[start : start + 3]]
    (project / "people.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (project / "both.yaml").write_text(
        "steps:\n  - mapping: firms.yaml\n    name: companies\n  - people.yaml\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    assert cli("run", "both.yaml", "-q") == 0, capsys.readouterr().err
    (run,) = [s for d in reports(project) for s in [summary_of(d)] if s["pipeline"] == "both"]
    (_firms, people) = run["steps"]
    assert people["references"]["company_id"]["set"] == 2


def test_run_takes_a_mapping_file_and_says_what_it_expected_otherwise(
    project: Path, cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("run", "configs/companies.yaml", "--dry-run", "-q") == 1  # sample's bad rows
    summary = json.loads((reports(project)[0] / "summary.json").read_text())
    assert summary["pipeline"] == "companies" and summary["steps"][0]["step"] == "companies"
    capsys.readouterr()
    assert cli("run", "sample_data/contacts.csv") == 2
    err = capsys.readouterr().err
    assert "this is a data file, not a pipeline or mapping (YAML)" in err
    assert "recordsync import sample_data/contacts.csv --type OBJECT_TYPE" in err
    (project / "odd.yaml").write_text("stepz: [configs/contacts.yaml]\n", encoding="utf-8")
    assert cli("run", "odd.yaml") == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1
    assert "expected a pipeline (a `steps:` list of mapping files) or a mapping" in err
    assert "did you mean 'steps'" in err


SEED = """
users:
  - {id: 6f1c2a3b-0009-4000-8000-000000000009, full_name: Vera Vet, access_level: admin,
     email: vera@clinic.example}
object_types:
  - {slug: contacts, singular_slug: contact, display_name: Person, plural_display_name: People,
     description: People, icon: user, fields: []}
  - {slug: companies, singular_slug: company, display_name: Company,
     plural_display_name: Companies, description: Firms, icon: building, fields: []}
  - slug: pets
    singular_slug: pet
    display_name: Pet
    plural_display_name: Pets
    description: Patients.
    icon: paw
    fields:
      - {field_name: species, field_type: select, is_required: true, select_options:
          [{label: Dog, value: dog, order: 0}, {label: Cat, value: cat, order: 1}]}
      - {field_name: born_on, display_name: Birthday, field_type: date}
      - {field_name: owned_by_user_id, display_name: Vet, field_type: user}
"""


def test_the_embedded_sandbox_takes_a_custom_seed(
    project: Path, cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "clinic.yaml").write_text(SEED, encoding="utf-8")
    (project / "pets.csv").write_text(
        "Pet Name,Kind,Birthday,Vet\nRex,Dog,2020-05-01,vera@clinic.example\n"
        "Tom,cat,2019-01-31,Vera Vet\n",
        encoding="utf-8",
    )
    args = ("--type", "pets", "--sandbox-seed", "clinic.yaml", "-q")
    assert cli("init", "pets.csv", *args) == 0
    mapping = yaml.safe_load((project / "pets.yaml").read_text())
    assert mapping["name"] == {"column": "Pet Name"}
    assert mapping["fields"] == {"species": "Kind", "born_on": "Birthday"}
    assert mapping["owner"]["column"] == "Vet"
    assert cli("run", "pets.yaml", "--sandbox-seed", "clinic.yaml", "-q") == 0
    assert (project / ".recordsync" / "sandbox-clinic.db").is_file()
    capsys.readouterr()
    assert cli("run", "pets.yaml", "--dry-run", "-q") == 2  # the default seed has no pets
    assert "unknown object type 'pets'" in capsys.readouterr().err


def test_a_mapping_run_as_a_pipeline_keeps_its_state_under_the_file_stem(tmp_path: Path) -> None:
    from recordsync.state.names import state_name_of

    mapping = tmp_path / "firms.yaml"
    mapping.write_text("object_type: companies\nsource: {path: f.csv}\nname: Company Name\n")
    assert state_name_of(str(mapping)) == "firms"  # not the record name's column
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("name: nightly\nsteps: [firms.yaml]\n")
    assert state_name_of(str(pipeline)) == "nightly"
