"""Owner resolution: an owner e-mail column → ``owned_by_user_id``.

Looked up, trimmed and case-insensitively, in this order: the users listing's ``email``
(``users:email``), the owners file (``owners_file``), a user id given as is (``users:id``),
a user's full name (``users:name``). Unknown owners follow ``on_unknown``: ``fail`` the row,
``unowned`` (key omitted) or ``default``. A value that fits several users (two users with one
full name, or one e-mail) is ``ambiguous``: always a row error naming the candidates, never
one of them picked. Resolution runs once per distinct owner value.
"""

from __future__ import annotations

import csv
import difflib
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa

from recordsync.config.models import OwnerConfig
from recordsync.config.yamlmarks import parse_yaml
from recordsync.core.errors import ConfigError
from recordsync.validate.distinct import Outcome, boxed, distinct_outcomes, map_distinct

_ID = re.compile(r"^\s*([0-9a-fA-F]{8}-[0-9a-fA-F-]{27}|\d+)\s*$")
"""A user id in an owners CSV (a UUID, or digits): a first row holding one is no header."""


def load_owners_file(path: Path) -> dict[str, str]:
    """email → user id or full name, from YAML (a mapping) or CSV (two columns)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(
            f"cannot read owners file {path}: {exc}",
            key="owner.owners_file",
            hint="the path is relative to the mapping file's directory",
        ) from None
    if path.suffix.lower() in (".yaml", ".yml"):
        data = parse_yaml(text, str(path))[0] or {}
        if not isinstance(data, dict):
            raise ConfigError(
                "owners file must map e-mail → user id or full name", file=str(path), line=1
            )
        return {str(k).strip().lower(): str(v).strip() for k, v in data.items()}
    rows = [r for r in csv.reader(text.splitlines()) if r and any(c.strip() for c in r)]
    if rows and "@" not in rows[0][0] and not (len(rows[0]) > 1 and _ID.match(rows[0][1])):
        rows = rows[1:]  # a header row: no e-mail in its first cell, no user id in its second
    out: dict[str, str] = {}
    for i, row in enumerate(rows, start=2):
        if len(row) < 2:
            raise ConfigError(
                "owners CSV rows need two cells: email, user id or full name",
                file=str(path),
                line=i,
            )
        out[row[0].strip().lower()] = row[1].strip()
    return out


CLOSE = 0.85
"""How alike (difflib ratio) an unknown owner must be to a known one to be suggested."""


def _closest(raw: str, known: list[str]) -> str | None:
    """The known owner ``raw`` is very likely a misspelling of, else None.

    E-mails are compared in parts: the same domain and a local part at least ``CLOSE`` alike
    (``ada.lovelase@`` → ``ada.lovelace@``), or the same local part and a domain ``CLOSE``
    alike (``@acme.exmple``). Closeness alone (``zoe@`` ~ ``chloe@``) suggests nothing: a
    wrong suggestion would hand the row to another person."""
    best: tuple[float, str] | None = None
    for k in known:
        if "@" in raw and "@" in k:
            local, _, domain = raw.rpartition("@")
            k_local, _, k_domain = k.rpartition("@")
            if domain == k_domain:
                score = difflib.SequenceMatcher(None, local, k_local).ratio()
            elif local == k_local:
                score = difflib.SequenceMatcher(None, domain, k_domain).ratio()
            else:
                continue
        else:
            score = difflib.SequenceMatcher(None, raw.casefold(), k.casefold()).ratio()
        if score >= CLOSE and (best is None or score > best[0]):
            best = (score, k)
    return best[1] if best else None


def _index(users: list[dict[str, Any]], attr: str, fold: bool) -> dict[str, list[str]]:
    """``attr`` (trimmed, lower-cased or case-folded) → the ids of every user with it."""
    out: defaultdict[str, list[str]] = defaultdict(list)
    for u in users:
        if u.get(attr) and u.get("id") is not None:
            text = str(u[attr]).strip()
            ids = out[text.casefold() if fold else text.lower()]
            if str(u["id"]) not in ids:
                ids.append(str(u["id"]))
    return dict(out)


def _only(ids: list[str], how: str) -> tuple[str | None, str, list[str]]:
    """The one user of ``ids`` found ``how``, or ``ambiguous`` when there are several."""
    if len(ids) == 1:
        return ids[0], how, []
    return None, "ambiguous", ids


class OwnerResolver:
    """Resolves owner cells to user ids, per distinct value."""

    def __init__(
        self, cfg: OwnerConfig, users: list[dict[str, Any]] | None, base_dir: Path
    ) -> None:
        self.cfg = cfg
        self.online = users is not None
        users = users or []
        self.ids = {str(u["id"]) for u in users if u.get("id") is not None}
        self.emails = {
            str(u["id"]): str(u["email"]).strip().lower()
            for u in users
            if u.get("id") is not None and u.get("email")
        }
        self.by_email = _index(users, "email", fold=False)
        self.by_name = _index(users, "full_name", fold=True)
        self.file: dict[str, str] = {}
        if cfg.owners_file:
            self.file = load_owners_file(base_dir / cfg.owners_file)
        self.default: str | None = None
        if cfg.on_unknown == "default" and cfg.default:
            found, how, many = self._lookup(cfg.default)
            if how == "ambiguous":
                raise ConfigError(
                    f"owner.default {cfg.default!r} fits {len(many)} users: "
                    f"{self._candidates(many)}",
                    key="owner.default",
                    hint="give one user's id (or an e-mail only that user has)",
                )
            if found is None and self.online:
                raise ConfigError(
                    f"owner.default {cfg.default!r} is not a known user (e-mail, id or name)",
                    key="owner.default",
                    hint="use an e-mail or id from GET /api/meta/users",
                )
            self.default = found or cfg.default

    def _lookup(self, raw: str) -> tuple[str | None, str, list[str]]:
        """(user id or None, how, the candidate ids when ``how`` is ``ambiguous``)."""
        key = raw.strip().lower()
        emails = self.by_email.get(key)
        if emails is not None and (len(emails) == 1 or key not in self.file):
            return _only(emails, "users:email")  # a shared e-mail pinned in the file: below
        if key in self.file:
            target = self.file[key]
            if target in self.ids or not self.online:
                return target, "owners_file", []
            named = self.by_name.get(target.casefold())
            if named is not None:
                return _only(named, "owners_file")
            return None, "unknown", []
        if raw.strip() in self.ids:
            return raw.strip(), "users:id", []
        named = self.by_name.get(raw.strip().casefold())
        if named is not None:
            return _only(named, "users:name")
        return None, "unknown" if self.online else "offline", []

    def _candidates(self, ids: list[str]) -> str:
        return ", ".join(
            f"{self.emails[i]} (id {i})" if i in self.emails else f"id {i}" for i in ids
        )

    def _ambiguous(self, raw: str, ids: list[str]) -> str:
        """The row error of an owner value that fits several users."""
        value = raw.strip()
        key = value.lower()
        pinned = self.file.get(key)
        if pinned is not None:  # the owners file names a full name that several users have
            fix = (
                f"the owners file {self.cfg.owners_file} maps it to {pinned!r}: "
                f"write the right user's id there instead ('{key}: <user id>')"
            )
        else:
            where = (
                f"the owners file {self.cfg.owners_file}"
                if self.cfg.owners_file
                else "an owners file (owner.owners_file in the mapping)"
            )
            fix = f"pin the right one in {where} with a line '{key}: <user id>'"
        return f"fits {len(ids)} users: {self._candidates(ids)}; {fix}"

    def _one(self, raw: str) -> Outcome:
        found, how, many = self._lookup(raw)
        if found is not None:
            return (found, how), None, None
        if how == "ambiguous":
            return (None, "ambiguous"), self._ambiguous(raw, many), None
        if how == "offline":
            return (None, "offline"), None, None
        if self.cfg.on_unknown == "default":
            return (self.default, "default"), None, None
        if self.cfg.on_unknown == "unowned":
            return (None, "unowned"), None, None
        close = _closest(raw.strip().lower(), list(self.by_email) + list(self.file))
        hint = None
        if close is not None:
            target = self._lookup(close)[0]
            if target is not None:
                hint = {self._owners_file_label(): {raw.strip().lower(): target}}
        where = "users listing" + (" or owners file" if self.cfg.owners_file else "")
        return (None, "unknown"), f"is not a known owner (not in the {where})", hint

    def _owners_file_label(self) -> str:
        """Where a suggested ``e-mail: user id`` line goes (the report prints it as a title)."""
        if self.cfg.owners_file:
            return f"owners file {self.cfg.owners_file} (named by owner.owners_file)"
        return "an owners file (create one and name it with owner.owners_file in the mapping)"

    def resolve(
        self, arr: pa.Array
    ) -> tuple[
        list[tuple[str | None, str] | None],
        list[str | None] | None,
        list[dict[str, Any] | None] | None,
    ]:
        """Per row: (user id or None, how) — None for blank cells — plus reason and hint."""
        return map_distinct(arr, self._one)

    def resolve_rows(
        self, arr: pa.Array
    ) -> tuple[
        list[str | None],
        list[str | None],
        list[str | None] | None,
        list[dict[str, Any] | None] | None,
    ]:
        """Per row: user id (None: no owner), how it was found, reason and hint.

        Blank cells get the default owner (``default``) when there is one, else ``blank``.
        Worked out once per distinct cell, then spread to the rows."""
        idx, outcomes = distinct_outcomes(arr, self._one)
        ids: list[str | None] = []
        hows: list[str | None] = []
        for found, _, _ in outcomes:
            if found is None:  # a blank cell
                ids.append(self.default)
                hows.append("default" if self.default is not None else "blank")
            else:
                ids.append(found[0])
                hows.append(found[1])
        reasons = [o[1] for o in outcomes]
        hints = [o[2] for o in outcomes]
        return (
            boxed(ids)[idx].tolist(),
            boxed(hows)[idx].tolist(),
            boxed(reasons)[idx].tolist() if any(r is not None for r in reasons) else None,
            boxed(hints)[idx].tolist() if any(h is not None for h in hints) else None,
        )
