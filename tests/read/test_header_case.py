"""``source: {header_case: insensitive}``: a CSV header's names read as the mapping spells
them wherever the source is opened (its columns and its batches)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.config import MappingConfig
from recordsync.core.errors import ConfigError
from recordsync.read import iter_source, source_columns
from recordsync.read.header_case import fold_header


def mapping(path: str, header_case: str = "insensitive", **source: Any) -> MappingConfig:
    return MappingConfig.model_validate(
        {
            "object_type": "contacts",
            "source": {"path": path, "header_case": header_case, **source},
            "name": {"template": "{First Name} {Last Name}"},
            "fields": {"email": "Email"},
        }
    )


def rows(m: MappingConfig, base: Path) -> list[dict[str, Any]]:
    return [r for sb in iter_source(m.source, base) for r in sb.batch.to_pylist()]


def test_the_columns_and_the_rows_carry_the_mappings_spelling(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text(
        " EMAIL,first name ,LAST NAME,Notes\nann@x.example,Ann,Lee,hi\n", encoding="utf-8"
    )
    m = mapping("a.csv")
    assert source_columns(m.source, tmp_path) == ["Email", "First Name", "Last Name", "Notes"]
    assert rows(m, tmp_path) == [
        {"Email": "ann@x.example", "First Name": "Ann", "Last Name": "Lee", "Notes": "hi"}
    ]
    exact = mapping("a.csv", "exact")  # the default reads the header as it is
    assert source_columns(exact.source, tmp_path) == [" EMAIL", "first name ", "LAST NAME", "Notes"]


def test_a_name_spelled_as_the_mapping_spells_it_wins_two_others_are_refused(
    tmp_path: Path,
) -> None:
    """'Email' and 'EMAIL': 'Email' is the mapping's column, 'EMAIL' stays as it is. 'EMAIL'
    and 'email': either would be 'Email', so neither is picked: a configuration error."""
    (tmp_path / "a.csv").write_text("Email,EMAIL,First Name,Last Name\n", encoding="utf-8")
    cols = source_columns(mapping("a.csv").source, tmp_path)
    assert cols == ["Email", "EMAIL", "First Name", "Last Name"]
    (tmp_path / "b.csv").write_text("EMAIL,email,First Name,Last Name\n", encoding="utf-8")
    for read in (source_columns, iter_source):
        with pytest.raises(ConfigError, match="'EMAIL', 'email' differ only in case") as err:
            read(mapping("b.csv").source, tmp_path)
        assert err.value.key == "source.header_case"


names = st.lists(
    st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8),
    min_size=1,
    max_size=6,
    unique_by=lambda s: s.casefold(),
)


@given(names, st.data())
def test_a_header_differing_in_case_and_spaces_folds_back_to_the_names(
    wanted: list[str], data: st.DataObject
) -> None:
    def variant(name: str) -> str:
        flips = data.draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
        cased = "".join(c.swapcase() if f else c for c, f in zip(name, flips, strict=True))
        pad = data.draw(st.sampled_from(["", " ", "  "]))
        return data.draw(st.sampled_from([cased, pad + cased, cased + pad]))

    header = [variant(n) for n in wanted]
    if any(h.strip().casefold() != n.casefold() for h, n in zip(header, wanted, strict=True)):
        return  # swapcase is not a case fold for every letter (e.g. 'ß')
    assert fold_header(header, wanted) == wanted
    assert fold_header(wanted, wanted) == wanted  # the mapping's own spelling is kept
