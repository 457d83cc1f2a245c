"""The next step of one failure reason group: what to do about those rows, said for them.

report.md and report.html show it under each group (``code`` in backticks). It is made from
the group's text, its status and its example rows (their values, the rows they name, the
parent rows found for a missing reference): the value map to paste, the owners-file line to
add, the candidates of an ambiguous owner, the parent row to fix first, which duplicate won
and how to keep the other. A group no rule knows gets the general advice.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from recordsync.core.model import RowStatus
from recordsync.reconcile.field_errors import is_rejected_value
from recordsync.report.examples import ReasonExample, row_name, shown
from recordsync.report.parents import missing_ref
from recordsync.report.tally import StepTally

_FIELD = re.compile(r"field '([^']+)'")
_OPTIONS = re.compile(r"is not an option \(([^)]*)\)")
_FITS = re.compile(r"fits \d+ users: ([^;]*);")
_OWNERS_FILE = re.compile(r"the owners file (\S+?):? (?:with|maps)")
_WINNER = re.compile(r": (.+?) has the same key and wins \(duplicates: (\w+)\)")
_ALSO_ON = re.compile(r": also on (.+?) \(duplicates: fail\)")
_DATE_FORMAT = re.compile(r"does not match (date_format|datetime_format) ('[^']*')")
_REF_ROWS = re.compile(r"fits \d+ rows of step '([^']+)' with different keys")


@dataclass(frozen=True)
class Group:
    """One failure reason group of a step."""

    tally: StepTally
    reason: str
    rows: int
    status: RowStatus | None
    examples: list[ReasonExample]
    report_dir: str

    @property
    def field(self) -> str | None:
        m = _FIELD.search(self.reason)
        return m.group(1) if m else None

    def values(self, limit: int = 5) -> list[str]:
        """The distinct example values, in order."""
        out = [ex.value for ex in self.examples if ex.value]
        return list(dict.fromkeys(out))[:limit]

    def rows_named(self, limit: int = 3) -> str:
        names = [row_name(ex.source_file, ex.source_row) for ex in self.examples[:limit]]
        more = f" and {self.rows - len(names)} more" if self.rows > len(names) else ""
        return ", ".join(names) + more


def _flow(mapping: dict[str, str | None]) -> str:
    """``{'Custmer': customer}`` as a YAML flow mapping (a value map to paste)."""
    items = ", ".join(f"{_scalar(k)}: {_scalar(v)}" for k, v in mapping.items())
    return "{" + items + "}"


_PLAIN = re.compile(r"[A-Za-z][\w.@-]*(?: [\w.@-]+)*")
_RESERVED = frozenset({"yes", "no", "true", "false", "null", "on", "off", "y", "n"})


def _scalar(text: str | None) -> str:
    """A YAML scalar: plain when it reads back as the same string, else single-quoted."""
    if text is None:
        return "null"
    if _PLAIN.fullmatch(text) and text.lower() not in _RESERVED:
        return text
    return "'" + text.replace("'", "''") + "'"


def _not_an_option(g: Group) -> str | None:
    if "is not an option" not in g.reason or g.field is None:
        return None
    where = f"`{g.tally.mapping}`, `fields.{g.field}.value_map`"
    suggested = (g.tally.value_maps.get(g.field) or {}).get("value_map") or {}
    if suggested:
        return f"paste into {where}: `{_flow(suggested)}` (then run again)"
    options = _OPTIONS.search(g.reason)
    choose = f"<one of: {options.group(1)}>" if options else "<an option>"
    mapping: dict[str, str | None] = dict.fromkeys(g.values(3), choose)
    return (
        f"map each value to an option in {where}: `{_flow(mapping)}`, or fix the cells in "
        "the source; then run again"
    )


def _unknown_owner(g: Group) -> str | None:
    if "is not a known owner" not in g.reason:
        return None
    lines = ", ".join(f"`{_scalar(v)}: <user e-mail, id or full name>`" for v in g.values(3))
    return (
        f"add a line per owner to the mapping's owners file (`owner.owners_file` in "
        f"`{g.tally.mapping}`): {lines}; or fix the owner in the source, or set "
        "`owner.on_unknown` (`default` or `unowned`); then run again"
    )


def _ambiguous_owner(g: Group) -> str | None:
    if "users:" not in g.reason or "fits" not in g.reason:
        return None
    seen: dict[str, str] = {}
    for ex in g.examples:
        m = _FITS.search(ex.error)
        if m and ex.value:
            seen.setdefault(ex.value, m.group(1))
    who = "; ".join(f"{v!r} fits {c}" for v, c in seen.items())
    named = next((m.group(1) for ex in g.examples if (m := _OWNERS_FILE.search(ex.error))), None)
    where = f"`{named}`" if named else f"(`owner.owners_file` in `{g.tally.mapping}`)"
    return (
        f"pin the right user of each name in the mapping's owners file {where}, one line "
        f"`<name in lower case>: <user id>`; the candidates: {who}"
    )


def _missing_parent(g: Group) -> str | None:
    refs = [(ex, missing_ref(ex.error)) for ex in g.examples]
    found = [(ex, ref) for ex, ref in refs if ref is not None]
    if not found:
        return None
    fixes: list[str] = []
    for _ex, (step, key) in found:
        parent = g.tally.parents.get((step, key.casefold()))
        if parent is not None:
            fix = (
                f"{row_name(parent.source_file, parent.source_row)} of step '{step}' (probably "
                f"the row with key {key!r}) was not sent: {shown(parent.error, 160)}"
            )
            if fix not in fixes:
                fixes.append(fix)
    step = found[0][1][0]
    if fixes:
        return (
            "fix the parent row first: " + "; ".join(fixes) + "; the next run sends it, then "
            "these rows"
        )
    keys = ", ".join(dict.fromkeys(repr(k) for _, (_, k) in found))
    return (
        f"no row of step '{step}' holds {keys}: add it to that step's source (or fix the key "
        f"in this column), then run again; `on_missing: unset` in the `ref` leaves the field "
        "empty instead"
    )


def _in_file(rows: str, ex: ReasonExample) -> str:
    """``row 122`` (of the example's own file) as ``contacts.csv row 122``."""
    name = row_name(ex.source_file, 0).rsplit(" row ", 1)[0]
    return re.sub(r"(?<![\w.])row (\d+)(?! of )", rf"{name} row \1", rows)


def _ambiguous_ref(g: Group) -> str | None:
    m = _REF_ROWS.search(g.reason)
    if m is None:
        return None
    return (
        f"each value fits several rows of step '{m.group(1)}' (their keys are in each row's "
        "message, failures.csv): refer by a value unique among them (e.g. their ledger key), "
        "or make those rows' values unique; then run again"
    )


def _merged(g: Group) -> str | None:
    if g.status is not RowStatus.MERGED:
        return None
    return (
        "the service folds each of these rows into the record of the row its message names: "
        "make them differ (another domain, name or e-mail), or declare `merges: expected` in "
        f"`{g.tally.mapping}`"
    )


def _duplicate(g: Group) -> str | None:
    if g.status is not RowStatus.DUPLICATE and not g.reason.startswith("duplicate "):
        return None
    parts: list[str] = []
    policy = "last"
    for ex in g.examples[:3]:
        me = row_name(ex.source_file, ex.source_row)
        if m := _WINNER.search(ex.error):
            parts.append(f"{me} lost to {_in_file(m.group(1), ex)} (sent)")
            policy = m.group(2)
        elif m := _ALSO_ON.search(ex.error):
            parts.append(f"{me} shares its key with {_in_file(m.group(1), ex)}")
            policy = "fail"
    won = "; ".join(parts)
    keep = (
        "to keep a row that lost as a record of its own, give it a key of its own in the "
        "source (e.g. its own e-mail); if it is the same record, delete the line or declare "
        "the duplicates expected (`duplicates: {keep: " + policy + ", expected: true}`)"
    )
    return f"{won}: {keep}" if won else keep


def _date(g: Group) -> str | None:
    m = _DATE_FORMAT.search(g.reason)
    if m is None:
        return None
    values = ", ".join(repr(v) for v in g.values(3))
    return (
        f"the cells ({values}) do not read with `{m.group(1)}: {m.group(2)}`: fix them in the "
        f"source (a date that does not exist, such as 31/02) or change `fields.{g.field}."
        f"{m.group(1)}` in `{g.tally.mapping}`"
    )


def _by_text(g: Group) -> str | None:
    r, f = g.reason, g.field
    where = f"`fields.{f}` in `{g.tally.mapping}`"
    rules: list[tuple[bool, str]] = [
        (
            "is not a number" in r,
            f"write the cells as numbers in the source, or declare `thousands_separator` / "
            f"`decimal_separator` in {where}",
        ),
        (
            "must be <=" in r or "must be >=" in r or "decimal places" in r,
            "the field's limits refuse these values: fix the cells in the source "
            f"({g.rows_named()})",
        ),
        (
            "is not a boolean" in r,
            f"map the values in {where}: `value_map: "
            f"{_flow(dict.fromkeys(g.values(3), '<true, false or null>'))}`, or fix the cells",
        ),
        (
            "is not a valid email address" in r,
            f"fix the e-mail addresses in the source ({g.rows_named()})",
        ),
        (
            "is required, but the value is empty" in r,
            f"fill the cells in the source ({g.rows_named()}), or give {where} a `default:`",
        ),
        (
            "malformed line" in r,
            "fix the line in the source file (a stray quote or separator: its cells do not "
            f"line up with the header): {g.rows_named()}; the next run sends it",
        ),
    ]
    return next((text for hit, text in rules if hit), None)


def _sent(g: Group) -> str | None:
    if g.status is RowStatus.IN_DOUBT:
        return "check these rows in the target first (they may have been applied), then " + (
            f"`recordsync retry {g.report_dir}` (`--resend-in-doubt` to send them as they are)"
        )
    if g.status is not RowStatus.FAILED:
        return None
    if g.reason.startswith("not sent: "):
        return "not sent because the run stopped first: run again once the stop is dealt with"
    if is_rejected_value(g.reason):
        return (
            "the service refused the value: fix it in the source or the mapping (a "
            "`value_map`); a retry without a fix fails the same way"
        )
    return f"a resend may pass (a transient error): `recordsync retry {g.report_dir}`"


RULES: tuple[Callable[[Group], str | None], ...] = (
    _sent,
    _duplicate,
    _merged,
    _missing_parent,
    _ambiguous_ref,
    _ambiguous_owner,
    _unknown_owner,
    _not_an_option,
    _date,
    _by_text,
)
"""The first rule that knows the group says its next step."""


def group_step(g: Group) -> str:
    """The next step of a failure reason group (``code`` in backticks)."""
    for rule in RULES:
        text = rule(g)
        if text is not None:
            return text
    return "fix the source or the mapping: each row's own message is in `failures.csv`"


def groups(tallies: list[StepTally], report_dir: str) -> list[Group]:
    """Every failure reason group, the largest first."""
    out = [
        Group(t, reason, n, t.reason_status.get(reason), t.examples.get(reason, []), report_dir)
        for t in tallies
        for reason, n in t.reasons.items()
    ]
    out.sort(key=lambda g: -g.rows)
    return out
