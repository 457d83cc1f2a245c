"""check_pipeline (what ``recordsync validate --scan`` prints): problem counts and wording."""

from __future__ import annotations

from pathlib import Path

from recordsync.config import load_pipeline
from recordsync.run.checks import check_pipeline


def test_scan_counts_every_problem_and_says_a_malformed_line_once(tmp_path: Path) -> None:
    lines = ["Name,Email"] + [f"P{i},p{i}@x.example" for i in range(1, 12)]
    lines[2] = "P2,p2@x.example,extra"  # line 3: ragged
    lines[4] = "P4,p4@x.example,extra"  # line 5: ragged
    for i in (6, 7, 8, 9, 10):
        lines[i] = f"P{i},not-an-email"
    (tmp_path / "people.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "people.yaml").write_text(
        "object_type: contacts\nsource: {path: people.csv}\nname: Name\n"
        "match_by: [email]\nfields: {email: Email}\n",
        encoding="utf-8",
    )
    (tmp_path / "p.yaml").write_text("steps: [people.yaml]\n", encoding="utf-8")
    (rep,) = check_pipeline(load_pipeline(tmp_path / "p.yaml"), scan=True)
    assert rep.ok, rep.error
    assert rep.problems == 7 and len(rep.first_problems) == 5
    assert rep.first_problems[0] == "row 3: malformed line: expected 2 cells, found 3"
    assert not any("line 3:" in p or "line 5:" in p for p in rep.first_problems)


def test_a_ref_by_that_names_nothing_is_the_referring_steps_error(tmp_path: Path) -> None:
    (tmp_path / "orgs.csv").write_text("Org,Site\nAcme,acme.com\n", encoding="utf-8")
    (tmp_path / "people.csv").write_text("Name,Org\nAnn,Acme\n", encoding="utf-8")
    (tmp_path / "orgs.yaml").write_text(
        "object_type: companies\nsource: {path: orgs.csv}\nname: Org\nfields: {domain: Site}\n"
        "ledger_key: {column: Site, normalize: domain}\n",
        encoding="utf-8",
    )
    (tmp_path / "people.yaml").write_text(
        "object_type: contacts\nsource: {path: people.csv}\nname: Name\n"
        "fields:\n  company_id: {column: Org, ref: {step: orgs, by: title}}\n",
        encoding="utf-8",
    )
    (tmp_path / "p.yaml").write_text("steps: [orgs.yaml, people.yaml]\n", encoding="utf-8")
    orgs, people = check_pipeline(load_pipeline(tmp_path / "p.yaml"))
    assert orgs.ok and people.error is not None
    assert people.error.key == "fields.company_id.ref.by"
    assert "step 'orgs' maps no field 'title'" in people.error.message


def _step(tmp_path: Path, source: str) -> None:
    (tmp_path / "people.yaml").write_text(
        f"object_type: contacts\nsource: {source}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email}\n",
        encoding="utf-8",
    )
    (tmp_path / "p.yaml").write_text("steps: [people.yaml]\n", encoding="utf-8")


def test_a_byte_that_is_not_utf8_far_into_the_file_is_found_without_a_scan(
    tmp_path: Path,
) -> None:
    import gzip

    rows = [f"P{i},p{i}@x.example" for i in range(200_000)]  # ~4.6 MB: past the header check
    rows[150_000] = "Renée,renee@x.example"
    text = "Name,Email\n" + "\n".join(rows) + "\n"
    (tmp_path / "people.csv.gz").write_bytes(gzip.compress(text.encode("cp1252")))
    _step(tmp_path, "{path: people.csv.gz}")
    (rep,) = check_pipeline(load_pipeline(tmp_path / "p.yaml"))
    assert rep.error is not None
    assert rep.error.key == "source.encoding" and rep.error.line == 150_002
    assert rep.error.file is not None and rep.error.file.endswith("people.csv.gz")
    assert "not valid UTF-8 text (source.encoding is 'utf-8')" in rep.error.message
    assert rep.error.hint is not None and "set source.encoding" in rep.error.hint


def test_a_header_read_as_one_column_names_the_delimiter(tmp_path: Path) -> None:
    (tmp_path / "people.csv").write_text("Name,Email\nAda,ada@x.example\n", encoding="utf-8")
    _step(tmp_path, '{path: people.csv, delimiter: ";"}')  # a comma file read as ;-separated
    (rep,) = check_pipeline(load_pipeline(tmp_path / "p.yaml"))
    assert rep.error is not None and rep.error.key == "source.delimiter"
    assert "it is comma-separated (2 names: 'Name', 'Email'), but source.delimiter is ';'" in (
        rep.error.message
    )
    assert rep.error.hint is not None and 'source: {delimiter: ","}' in rep.error.hint
