"""The written mapping reads back as the proposal: any header text survives the YAML."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.config import load_mapping
from recordsync.config.refspec import RefBy
from recordsync.infer.engine import Choice, Proposal
from recordsync.infer.render import render_mapping
from recordsync.infer.sample import Sample

header_text = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="{}\u2028\u2029\x85"),
    min_size=1,
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(header_text, min_size=4, max_size=4, unique=True),
    st.dictionaries(header_text, header_text, max_size=3),
)
def test_rendered_mapping_loads_back_with_the_same_columns(
    cols: list[str], value_map: dict[str, str]
) -> None:
    name, email, stage, owner = cols
    prop = Proposal(
        "contacts",
        name={"column": name},
        name_evidence="a name column # with a hash: and colon",
        fields=[
            Choice("email", email, {}, "values are e-mail addresses", "high"),
            Choice("lifecycle_stage", stage, {"value_map": value_map} if value_map else {},
                   "options", "medium"),
        ],
        match_by=["email"],
        match_note="by e-mail",
        owner=Choice("owner", owner, {"on_unknown": "fail"}, "users' e-mails", "high"),
        unmapped=[("Zip: #1", "no field matches its name")],
        warnings=["column 'x': day/month # ambiguous"],
    )
    with tempfile.TemporaryDirectory() as tmp:
        source, path = Path(tmp) / "s.csv", Path(tmp) / "m.yaml"
        sample = Sample("csv", cols, {c: [] for c in cols}, delimiter=";", encoding="cp1252")
        path.write_text(render_mapping(prop, sample, source, path), encoding="utf-8")
        mapping = load_mapping(path)
    assert mapping.name.column == name and mapping.owner is not None
    assert mapping.owner.column == owner
    assert mapping.fields["email"].column == email
    assert mapping.fields["lifecycle_stage"].column == stage
    assert mapping.fields["lifecycle_stage"].value_map == (value_map or None)
    assert [r.by for r in mapping.match_by] == ["email"]
    assert (mapping.source.path, mapping.source.delimiter) == ("s.csv", ";")
    assert mapping.source.encoding == "cp1252"


def test_null_values_the_own_key_and_a_commented_reference_load_back() -> None:
    prop = Proposal(
        "contacts",
        name={"column": "Name"},
        ledger_key="CustomerId",
        ledger_evidence="an id: all different",
        refs=[Choice("company_id", "Company", {"ref": {"step": "companies", "by": "name"}},
                     "header 'Company' names a company", "medium")],
        null_values=["NULL", "N/A"],
        unmapped=[("Company", "a reference to companies")],
    )
    with tempfile.TemporaryDirectory() as tmp:
        source, path = Path(tmp) / "s.csv", Path(tmp) / "m.yaml"
        sample = Sample("csv", ["Name", "CustomerId", "Company"], {})
        text = render_mapping(prop, sample, source, path)
        path.write_text(text, encoding="utf-8")
        mapping = load_mapping(path)
        assert mapping.source.null_values == ["NULL", "N/A"]
        assert mapping.ledger_key is not None and mapping.ledger_key.column == "CustomerId"
        assert "company_id" not in mapping.fields  # commented: no companies step yet
        # uncommented, the reference is a valid one (given a companies step before it)
        path.write_text(text.replace("  # company_id:\n  #   ", "  company_id:\n    ")
                        .replace("\n  #   ref:", "\n    ref:").replace("fields: {}", "fields:"),
                        encoding="utf-8")
        ref = load_mapping(path).fields["company_id"]
    assert ref.column == "Company" and ref.ref is not None
    assert (ref.ref.mapping, ref.ref.by) == ("companies", RefBy(field="name"))
