"""Hints for columns the header lacks: the delimiter of a header read as one column."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordsync.config import load_mapping
from recordsync.config.models import MappingConfig
from recordsync.validate.column_hints import split_header


def mapping(tmp_path: Path, source: str = "{path: x.csv}") -> MappingConfig:
    path = tmp_path / "m.yaml"
    path.write_text(
        f"object_type: contacts\nsource: {source}\nname: Name\nfields: {{email: Email}}\n",
        encoding="utf-8",
    )
    return load_mapping(path)


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_a_header_that_another_delimiter_splits_into_names(tmp_path: Path, sep: str) -> None:
    m = mapping(tmp_path)
    assert split_header(m, [f'"Name"{sep}Email{sep}Phone']) == (sep, ["Name", "Email", "Phone"])


def test_the_delimiter_whose_names_hold_the_mappings_columns_wins(tmp_path: Path) -> None:
    m = mapping(tmp_path)
    assert split_header(m, ["Name;Email|Phone"]) == (";", ["Name", "Email|Phone"])
    assert split_header(m, ["Code;Id|NAME|e-mail"]) == ("|", ["Code;Id", "NAME", "e-mail"])
    assert split_header(m, ["A;B;C|Name"]) == ("|", ["A;B;C", "Name"])  # names before count
    assert split_header(m, ["A;B;C|D"]) == (";", ["A", "B", "C|D"])  # then the most names


def test_no_delimiter_when_nothing_splits(tmp_path: Path) -> None:
    m = mapping(tmp_path)
    assert split_header(m, ["Full Name"]) is None
    assert split_header(m, ["Name;"]) is None  # one name is not a header of several
    assert split_header(m, ["Name;Email", "Phone"]) is None  # two columns: read as a header
    assert split_header(mapping(tmp_path, '{path: x.csv, delimiter: ";"}'), ["A;B"]) is None
