"""Sources the CSV reader would hang on or crash on are refused up front, naming the file
and the option to set (read/paths.check_source_file, called by prepare.check_source)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from recordsync.config import load_mapping
from recordsync.core.errors import SourceError
from recordsync.prepare import check_source

MAPPING = """\
object_type: contacts
source: {path: c.csv%s}
name: Name
match_by: [email]
fields: {email: Email}
"""
TEXT = "Name,Email\nAnn,ann@x.example\n"


def _mapping(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(MAPPING % extra)
    return path


@pytest.mark.parametrize(
    ("codec", "shown", "fix"),
    [
        ("utf-16", "UTF-16 (little-endian)", "utf-16"),
        ("utf-16-be", "UTF-16 or UTF-32", "utf-16"),
        ("utf-32", "UTF-32 (little-endian)", "utf-32"),
    ],
)
def test_a_wide_encoding_read_as_utf8_is_a_named_source_error(
    tmp_path: Path, codec: str, shown: str, fix: str
) -> None:
    (tmp_path / "c.csv").write_bytes(TEXT.encode(codec))
    with pytest.raises(SourceError) as info:
        check_source(load_mapping(_mapping(tmp_path)), tmp_path)
    text = str(info.value)
    assert f"c.csv looks like {shown}" in text and "[source.encoding]" in text
    assert f"encoding: {fix}" in text and info.value.exit_code == 2


def test_the_same_file_with_its_encoding_set_is_read(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_bytes(TEXT.encode("utf-16"))
    assert check_source(load_mapping(_mapping(tmp_path, ", encoding: utf-16")), tmp_path) == [
        "Name",
        "Email",
    ]


def test_a_nul_in_one_cell_is_not_mistaken_for_utf16(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_text("Name,Email\nAnn,a\x00@x.example\n")
    assert check_source(load_mapping(_mapping(tmp_path)), tmp_path) == ["Name", "Email"]


def test_a_fifo_is_refused_instead_of_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "c.csv")  # nobody ever writes to it: reading it would block forever
    with pytest.raises(SourceError) as info:
        check_source(load_mapping(_mapping(tmp_path)), tmp_path)
    assert "is a FIFO (named pipe)" in str(info.value) and "[source.path]" in str(info.value)
