"""The input hash: stable, order-free, sensitive to every value, blind to match_by."""

from __future__ import annotations

import datetime
import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.state import input_hash
from recordsync.state.hashing import (
    FORMAT_TAG,
    _encode_columns,
    _NotPlain,
    canonical_input,
    encode_input,
    encode_inputs,
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
field_maps = st.dictionaries(st.text(min_size=1, max_size=12), values, max_size=8)
payloads = st.fixed_dictionaries(
    {"name": st.text(max_size=30), "fields": field_maps},
    optional={"profile_image_url": st.text(max_size=30)},
)


def _shuffled(obj: Any, rnd: random.Random) -> Any:
    if isinstance(obj, dict):
        items = list(obj.items())
        rnd.shuffle(items)
        return {k: _shuffled(v, rnd) for k, v in items}
    if isinstance(obj, list):
        return [_shuffled(v, rnd) for v in obj]
    return obj


@given(payloads, st.randoms(use_true_random=False))
def test_key_order_does_not_matter(payload: dict[str, Any], rnd: random.Random) -> None:
    assert input_hash(_shuffled(payload, rnd)) == input_hash(payload)


@given(payloads, st.text(min_size=1, max_size=12), values)
def test_any_field_value_change_changes_the_hash(
    payload: dict[str, Any], field: str, value: Any
) -> None:
    before = payload["fields"].get(field, object())
    changed = {**payload, "fields": {**payload["fields"], field: value}}
    if canonical_input(changed) == canonical_input(payload):
        # only a value that serialises identically may hash the same (e.g. the same value)
        assert before == value and type(before) is type(value)
    else:
        assert input_hash(changed) != input_hash(payload)


@given(payloads, st.text(max_size=30))
def test_name_change_changes_the_hash(payload: dict[str, Any], name: str) -> None:
    changed = {**payload, "name": name}
    assert (input_hash(changed) == input_hash(payload)) == (name == payload["name"])


@given(payloads, st.sampled_from(["id", "email", "name"]), st.one_of(st.integers(), st.text()))
def test_match_by_does_not_count(payload: dict[str, Any], match_by: str, value: Any) -> None:
    assert input_hash({**payload, "match_by": match_by, "match_value": value}) == input_hash(
        payload
    )


def test_types_are_distinguished() -> None:
    hashes = {input_hash({"name": "n", "fields": {"x": v}}) for v in (1, 1.0, "1", True, None)}
    assert len(hashes) == 5


def test_absent_and_null_differ() -> None:
    base = {"name": "n", "fields": {}}
    assert input_hash(base) != input_hash({**base, "profile_image_url": None})


def test_known_value_is_stable_across_versions() -> None:
    # A change of the canonical form must change FORMAT_TAG (every row is then resent once).
    # 64 bits since state schema version 7: the first half of the 128 bits hashed before,
    # so that the upgrade cuts the hashes the ledger holds and nothing is sent again
    payload = {"name": "Ada", "fields": {"email": "ada@acme.example", "lead_score": 7}}
    assert input_hash(payload) == "3fd2072b11cc7f03"
    assert "3fd2072b11cc7f038140ff265af8403f".startswith(input_hash(payload))


@given(payloads)
def test_canonical_form_is_sorted_compact_json(payload: dict[str, Any]) -> None:
    subset = {k: payload[k] for k in ("name", "fields", "profile_image_url") if k in payload}
    expected = json.dumps(subset, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_input(payload) == FORMAT_TAG + expected.encode("utf-8", "surrogatepass")


def test_non_json_values_hash_as_their_text() -> None:
    day = datetime.date(2026, 11, 22)
    assert input_hash({"name": "n", "fields": {"d": day}}) == input_hash(
        {"name": "n", "fields": {"d": "2026-11-22"}}
    )


# what encode_input meets: every JSON value (floats with NaN and infinities, integers beyond 64
# bits, control characters, lone surrogates), dates, nesting, match keys, keys of any kind
_odd_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
_any_scalar = st.one_of(
    scalars,
    st.floats(),
    st.integers(min_value=-(2**70), max_value=2**70),
    _odd_text,
    st.dates(),
)
_any_value = st.recursive(
    _any_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_odd_text, inner, max_size=4)
    ),
    max_leaves=12,
)
_any_payload = st.fixed_dictionaries(
    {
        "name": st.one_of(st.text(max_size=30), _odd_text, st.none()),
        "fields": st.one_of(
            st.dictionaries(st.text(min_size=1, max_size=12), _any_value, max_size=8),
            st.dictionaries(st.integers(), st.text(), max_size=2),  # not string keys
        ),
    },
    optional={
        "profile_image_url": st.one_of(st.text(max_size=30), st.none()),
        "match_by": st.sampled_from(["id", "email", "name"]),
        "match_value": st.one_of(st.integers(), _odd_text),
        "extra": st.integers(),
    },
)


def _has_float(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return isinstance(value, float)


@given(_any_payload)
def test_encode_input_gives_the_hash_and_the_payload_as_json(payload: dict[str, Any]) -> None:
    """One encoding for the hash and the request body: the hash is always input_hash's; the
    JSON, when made, decodes to the payload; floats (written differently by orjson) never
    take that path, and neither does anything json.dumps would write by str()."""
    digest, encoded = encode_input(payload)
    assert digest == input_hash(payload)
    if encoded is not None:
        assert json.loads(encoded) == payload
        assert not _has_float(payload) and "extra" not in payload


def test_encode_input_takes_the_fast_path_for_plain_payloads() -> None:
    payload = {
        "name": 'Zoë "Z" \u2028\x01',
        "match_by": "email",
        "match_value": "z@x.example",
        "fields": {"email": "z@x.example", "score": 2**63, "tags": ["a", "b"], "ok": None},
    }
    digest, encoded = encode_input(payload)
    assert digest == input_hash(payload) and encoded is not None
    assert json.loads(encoded) == payload
    for odd in (1.5, "\ud800", 2**64, datetime.date(2026, 1, 1), {"deep": {"er": 1}}):
        assert encode_input({**payload, "fields": {"x": odd}})[1] is None


@given(st.lists(st.one_of(_any_payload, payloads), max_size=6))
def test_encode_inputs_is_encode_input_of_each(group: list[dict[str, Any]]) -> None:
    """A group checked at once gives each payload's hash and JSON as encode_input would."""
    out = encode_inputs(group)
    assert [digest for digest, _ in out] == [input_hash(p) for p in group]
    for payload, (_, encoded) in zip(group, out, strict=True):
        if encoded is not None:
            assert json.loads(encoded) == payload
            assert not _has_float(payload) and "extra" not in payload


def test_one_odd_payload_leaves_the_rest_of_its_group_on_the_fast_path() -> None:
    group: list[dict[str, Any]] = [
        {"name": f"n{i}", "match_by": "email", "match_value": f"{i}@x", "fields": {"t": ["a"]}}
        for i in range(3)
    ]
    assert all(encoded is not None for _, encoded in encode_inputs(group))
    group[1]["fields"]["score"] = 0.5
    assert [encoded is None for _, encoded in encode_inputs(group)] == [False, True, False]


_plain_value = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=8)
)
_mapped = st.fixed_dictionaries(  # what the mapper makes: exactly these four keys
    {
        "name": st.one_of(st.text(max_size=12), st.none()),
        "match_by": st.sampled_from(["id", "email", "name"]),
        "match_value": st.one_of(st.integers(0, 2**63 - 1), st.text(max_size=12)),
        "fields": st.dictionaries(
            st.text(min_size=1, max_size=8),
            st.one_of(_plain_value, st.lists(_plain_value, max_size=3)),
            max_size=6,
        ),
    }
)
_odd = st.one_of(st.sampled_from([0.5, "\ud800", 2**64, -(2**63) - 1]), _any_scalar)
_odd_mapped = st.one_of(  # or with one odd value: a float, a lone surrogate, a huge integer...
    _mapped, st.builds(lambda p, v: {**p, "fields": {**p["fields"], "x": v}}, _mapped, _odd)
)


@given(st.lists(_odd_mapped, max_size=6))
def test_encode_inputs_of_mapped_payloads_is_byte_for_byte_encode_input(
    group: list[dict[str, Any]],
) -> None:
    """The fast path for the mapper's payloads (no copy of each) gives the very hashes and
    request JSON that encode_input gives one payload at a time."""
    assert encode_inputs(group) == [encode_input(p) for p in group]


_cell = st.one_of(
    _plain_value,
    st.lists(_plain_value, max_size=3),
    _odd_text,  # any code point, lone surrogates included
    st.floats(),
    st.dates(),
    st.integers(min_value=-(2**65), max_value=2**65),
    st.lists(st.lists(_plain_value, max_size=2), max_size=2),  # a list in a list
    st.dictionaries(st.text(max_size=4), _plain_value, max_size=2),  # an object in fields
)
_row = st.fixed_dictionaries(  # the mapper's payload, every value plain
    {
        "name": st.one_of(st.text(max_size=12), st.none(), st.integers(-(2**63), 2**64 - 1)),
        "match_value": st.one_of(st.integers(0, 2**63 - 1), st.text(max_size=12), st.none()),
        "fields": st.dictionaries(
            st.sampled_from(["email", "phone", "tags", "score", "stage", "é", "a\x00"]),
            st.one_of(_plain_value, st.lists(_plain_value, max_size=3)),
            max_size=7,
        ),
    }
)


def _variant(row: dict[str, Any], by: str, odd: Any, how: int) -> dict[str, Any]:
    """``row`` with ``match_by``, and then, by ``how``: as is (the mapper's shape), a field
    set to ``odd``, no ``fields`` (a fourth key of another name), an image as a fifth key,
    or ``odd`` as its name."""
    out = {"name": row["name"], "match_by": by, "match_value": row["match_value"]}
    if how == 2:
        return {**out, "profile_image_url": "https://x.example/a.png"}
    out["fields"] = dict(row["fields"])
    if how == 1:
        out["fields"]["odd"] = odd
    if how == 3:
        out["profile_image_url"] = None
    if how == 4:
        out["name"] = odd
    return out


@given(
    st.lists(_row, max_size=30),
    st.one_of(st.none(), st.tuples(st.integers(0, 30), _row, _cell, st.integers(1, 4))),
    st.one_of(st.sampled_from(["email", "id"]), st.none()),
)
def test_encode_inputs_column_by_column_is_encode_input_of_each(
    rows: list[dict[str, Any]],
    odd: tuple[int, dict[str, Any], Any, int] | None,
    one_rule: str | None,
) -> None:
    """Groups of the mapper's payloads, encoded column by column when every value is plain:
    byte for byte what encode_input gives each payload; and so with one payload among them
    that has an odd value (a float, a date, a lone surrogate, an integer beyond 64 bits, a
    nested list or object) or an odd shape (another key, a fifth key); one match rule for
    the group or one each."""
    rules = ["email", "id", "name"]
    group = [_variant(row, one_rule or rules[i % 3], None, 0) for i, row in enumerate(rows)]
    if odd is not None:
        at, row, value, how = odd
        group.insert(min(at, len(group)), _variant(row, one_rule or "email", value, how))
    expected = [encode_input(p) for p in group]
    assert encode_inputs(group) == expected
    assert [digest for digest, _ in expected] == [input_hash(p) for p in group]
    for payload, (_, encoded) in zip(group, expected, strict=True):
        if encoded is not None:
            assert json.loads(encoded) == payload


def test_plain_groups_take_the_column_path() -> None:
    """A group of the mapper's plain payloads is encoded column by column (no fallback)."""
    group = [
        {
            "name": f"Zoë {i}",
            "match_by": "email",
            "match_value": f"z{i}@x.example",
            "fields": {"tags": ["a", None], "score": i, "ok": True, "email": f"z{i}@x.example"},
        }
        for i in range(5)
    ]
    assert _encode_columns(group) == [encode_input(p) for p in group]
    for odd in (0.5, datetime.date(2026, 1, 1), [[1]], {"a": 1}, "\ud800", 2**64):
        with pytest.raises(_NotPlain):
            _encode_columns([*group, {**group[0], "fields": {"x": odd}}])
