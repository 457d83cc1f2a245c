"""References by any field (``ref.by``): the index of the referenced step's rows, the
resolver's outcomes and counts, and the config syntax."""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from recordsync.config.models import FieldSpec, MappingConfig, RefSpec
from recordsync.core.errors import ConfigError, RowError
from recordsync.nightly.ref_index import RefIndex, by_spec
from recordsync.nightly.refs import ReferenceResolver, RunLedger
from recordsync.state import StateStore


def companies(tmp: Path, rows: list[list[str]], **extra: object) -> MappingConfig:
    with open(tmp / "companies.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["Company Name", "Website", "City"])
        w.writerows([*r, "Paris"] for r in rows)
    data: dict[str, object] = {
        "object_type": "companies",
        "source": {"path": "companies.csv"},
        "name": "Company Name",
        "fields": {"domain": "Website"},
        "ledger_key": {"column": "Website", "normalize": "domain"},
        **extra,
    }
    return MappingConfig.model_validate(data)


def index(tmp: Path, target: MappingConfig, **ref: object) -> RefIndex:
    return RefIndex(RefSpec.model_validate({"mapping": "companies", **ref}), target, tmp)


def test_names_fold_case_and_whitespace_and_point_at_the_ledger_keys(tmp_path: Path) -> None:
    target = companies(
        tmp_path,
        [
            ["Acme  Ltd", "https://www.acme.com/"],
            ["Initech", "initech.com"],
            ["INITECH", "initech.io"],
            ["Initech", "www.initech.com"],  # the same key again: one candidate
            ["No Site", ""],  # no ledger key (no match_by either): cannot be referred to
        ],
    )
    idx = index(tmp_path, target, by="name")
    assert idx.keys_for(idx.normalize("  acme LTD ") or "") == ["acme.com"]
    assert idx.keys_for("initech") == ["initech.com", "initech.io"]
    assert idx.keys_for("no site") == []
    assert idx.keys_for("acme ltd.") == []  # nothing but case and whitespace is folded


def test_a_row_without_a_declared_key_is_found_by_its_match_key(tmp_path: Path) -> None:
    target = companies(tmp_path, [["No Site", ""], ["Acme", "acme.com"]], match_by=["name"])
    idx = index(tmp_path, target, by={"column": "City"})
    assert idx.keys_for("paris") == ["name:No Site", "acme.com"]
    idx = index(tmp_path, target, by="name")
    assert idx.keys_for("no site") == ["name:No Site"]
    assert idx.keys_for("acme") == ["acme.com"]


def test_by_domain_compares_hosts(tmp_path: Path) -> None:
    target = companies(tmp_path, [["Acme", "https://www.Acme.com/about"]])
    idx = index(tmp_path, target, by="domain")
    assert idx.normalize("http://acme.com") == "acme.com"
    assert idx.keys_for("acme.com") == ["acme.com"]
    exact = index(tmp_path, target, by="name", normalize="exact")
    assert exact.keys_for("Acme") == ["acme.com"] and exact.keys_for("acme") == []


@settings(max_examples=40, deadline=None)
@given(
    words=st.lists(
        st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc", "Z"]), min_size=1),
        min_size=1,
        max_size=4,
    ),
    pad=st.sampled_from(["", " ", "  ", "\t"]),
)
def test_a_name_is_found_however_its_ascii_case_and_spacing_are_written(
    words: list[str], pad: str
) -> None:
    name = " ".join(words)
    written = pad + "  ".join("".join(c.upper() if c.isascii() else c for c in w) for w in words)
    with tempfile.TemporaryDirectory() as tmp:
        idx = index(Path(tmp), companies(Path(tmp), [[name, "acme.com"]]), by="name")
        assert idx.keys_for(idx.normalize(written + pad) or "") == ["acme.com"]


def resolver(tmp: Path, store: StateStore | RunLedger, **ref: object) -> ReferenceResolver:
    target = companies(
        tmp,
        [["Acme", "acme.com"], ["Initech", "initech.com"], ["initech", "initech.io"],
         ["Globex", "globex.io"]],
    )  # fmt: skip
    spec = RefSpec.model_validate({"mapping": "companies", "by": "name", **ref})
    return ReferenceResolver(
        store,
        "nightly",
        "companies",
        on_missing=spec.on_missing,
        column="company_id",
        index=RefIndex(spec, target, tmp),
    )


def test_outcomes_and_counts(tmp_path: Path, store: StateStore) -> None:
    store.record_acknowledged(
        "nightly",
        "companies",
        "r1",
        [
            ("acme.com", 10, "h", "created"),
            ("initech.com", 11, "h", "created"),
            ("initech.io", 12, "h", "created"),
            ("globex.io", None, None, "failed"),
        ],
    )
    r = resolver(tmp_path, store)
    r.prefetch(["ACME", "initech", "nobody"])
    assert r.resolve(" acme ") == 10
    assert r.resolve("") is None
    with pytest.raises(RowError, match=r"fits 2 rows .*'initech.com', 'initech.io'.*ambiguous"):
        r.resolve("Initech")
    with pytest.raises(RowError, match=r"^company_id: field 'name' = 'Nobody' fits no row"):
        r.resolve("Nobody")
    with pytest.raises(RowError, match=r"fits a row of step 'companies', but .*last send was"):
        r.resolve("globex")
    assert dict(r.counts) == dict(set=1, no_value=1, not_found=2, ambiguous=1, from_service=0)


def test_unset_leaves_not_found_out_but_never_guesses_an_ambiguous_one(
    tmp_path: Path, store: StateStore
) -> None:
    store.record_acknowledged(
        "nightly",
        "companies",
        "r1",
        [("initech.com", 11, "h", "created"), ("initech.io", 12, "h", "created")],
    )
    r = resolver(tmp_path, store, on_missing="unset")
    assert r.resolve("Acme") is None  # never synced: left out
    with pytest.raises(RowError, match="ambiguous"):
        r.resolve("initech")
    assert (r.counts["not_found"], r.counts["ambiguous"]) == (1, 1)


def test_a_dry_run_counts_planned_rows_as_set(tmp_path: Path) -> None:
    ledger = RunLedger()
    ledger.plan("companies", ["acme.com", "initech.com"])  # initech.io was not valid
    r = resolver(tmp_path, ledger)
    assert r.resolve("acme") is None and r.resolve("INITECH") is None
    assert r.counts["set"] == 2 and r.counts["ambiguous"] == 0


def test_the_ledger_key_path_counts_too(store: StateStore) -> None:
    store.record_acknowledged("nightly", "companies", "r1", [("acme.com", 10, "h", "created")])
    r = ReferenceResolver(store, "nightly", "companies", on_missing="unset")
    assert (r.resolve("acme.com"), r.resolve("nope"), r.resolve(None)) == (10, None, None)
    assert dict(r.counts) == dict(set=1, no_value=1, not_found=1, ambiguous=0, from_service=0)


def test_the_config_syntax() -> None:
    assert RefSpec.model_validate("companies").by is None
    spec = RefSpec.model_validate({"step": "companies", "by": "column:Company Name"})
    assert spec.mapping == "companies" and spec.by is not None
    assert (spec.by.column, spec.by.label, spec.match) == (
        "Company Name",
        "column 'Company Name'",
        "fold",
    )
    assert RefSpec.model_validate({"mapping": "c", "by": "domain"}).match == "domain"
    assert RefSpec.model_validate({"mapping": "c", "by": "name", "normalize": "exact"}).match == (
        "exact"
    )
    with pytest.raises(ValidationError, match="not both"):
        RefSpec.model_validate({"step": "c", "mapping": "c"})
    with pytest.raises(ValidationError, match="'normalize' applies to 'by'"):
        RefSpec.model_validate({"mapping": "c", "normalize": "fold"})
    with pytest.raises(ValidationError, match="exactly one of 'field' or 'column'"):
        RefSpec.model_validate({"mapping": "c", "by": {"field": "name", "column": "X"}})


def test_by_must_name_a_field_the_step_maps(tmp_path: Path) -> None:
    tags = {"column": "City", "split": ";"}
    target = companies(tmp_path, [], fields={"domain": "Website", "tags": tags})
    assert by_spec(RefSpec.model_validate({"mapping": "c", "by": "domain"}), target) == FieldSpec(
        column="Website"
    )
    with pytest.raises(ConfigError, match="maps no field 'city'") as err:
        by_spec(RefSpec.model_validate({"mapping": "c", "by": "city"}), target, "company_id")
    assert err.value.key == "fields.company_id.ref.by"
    assert err.value.hint is not None and "name, domain" in err.value.hint
    with pytest.raises(ConfigError, match="that a reference can compare"):
        by_spec(RefSpec.model_validate({"mapping": "c", "by": "tags"}), target)
