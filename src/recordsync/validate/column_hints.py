"""Columns a mapping names that the source's header lacks: where each is named, and the
header column it most likely means (``did you mean 'E-mail Address'?``); or, when the whole
header was read as one column that another delimiter splits into names, that delimiter
(``source: {delimiter: ";"}``).

A suggestion is only a hint in the error message; a column is never matched to another
spelling silently (``source: {header_case: insensitive}`` is the explicit way for case).
"""

from __future__ import annotations

import difflib

from recordsync.config.loader import mapping_line
from recordsync.config.models import FieldSpec, MappingConfig
from recordsync.core.suggest import normalise, normalize


def column_keys(mapping: MappingConfig) -> dict[str, tuple[int | str, ...]]:
    """Each source column the mapping names → the key path that first names it."""
    out: dict[str, tuple[int | str, ...]] = {}
    specs: list[tuple[tuple[int | str, ...], FieldSpec | None]] = [
        (("name",), mapping.name),
        (("profile_image_url",), mapping.profile_image_url),
    ]
    specs += [(("fields", f), s) for f, s in mapping.fields.items()]
    for loc, spec in specs:
        for col in spec.columns if spec is not None else []:
            out.setdefault(col, loc)
    for i, rule in enumerate(mapping.match_by):
        if rule.column:
            out.setdefault(rule.column, ("match_by", i))
    if mapping.owner is not None:
        out.setdefault(mapping.owner.column, ("owner", "column"))
    if mapping.ledger_key is not None:
        out.setdefault(mapping.ledger_key.column, ("ledger_key",))
    return out


def closest(column: str, header: list[str]) -> str | None:
    """The header column ``column`` most likely means: the same words once case and
    punctuation are ignored, else a close spelling (difflib ratio >= 0.75), else the one
    header name holding all of its words."""
    key = normalize(column)
    same = [h for h in header if normalize(h) == key]
    if same:
        return same[0]
    by_norm = {normalize(h): h for h in header}
    close = difflib.get_close_matches(key, list(by_norm), n=1, cutoff=0.75)
    if close:
        return by_norm[close[0]]
    words = set(key.split())  # 'Email' for 'E-mail Address': the one header with its words
    wider = [h for n, h in by_norm.items() if words and words <= set(n.split())]
    return wider[0] if len(wider) == 1 else None


def missing_lines(mapping: MappingConfig, missing: list[str], header: list[str]) -> list[str]:
    """``m.yaml:7 [fields.email]: column 'Emial' is not in the header; did you mean 'Email'?``
    for every missing column, in the order the mapping names them."""
    keys = column_keys(mapping)
    lines = []
    for col in missing:
        loc = keys.get(col, ())
        line = mapping_line(mapping, *loc) if loc else None
        where = mapping.label + (f":{line}" if line is not None else "")
        key = ".".join(str(p) for p in loc) or "columns"
        guess = closest(col, header)
        hint = f"; did you mean {guess!r}?" if guess is not None else ""
        lines.append(f"{where} [{key}]: column {col!r} is not in the header{hint}")
    return lines


def first_line(mapping: MappingConfig, missing: list[str]) -> int | None:
    """The line of the key naming the first missing column (else of ``fields``)."""
    loc = column_keys(mapping).get(missing[0], ()) if missing else ()
    return mapping_line(mapping, *loc) if loc else mapping_line(mapping, "fields")


DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
"""Delimiters a header read as one column is tried with, and how messages name them."""


def split_header(mapping: MappingConfig, header: list[str]) -> tuple[str, list[str]] | None:
    """(delimiter, names) when ``header`` is one column (a CSV header read with the wrong
    delimiter) that one of :data:`DELIMITERS` other than the source's splits into several
    names; of several such, the one whose names hold most of the mapping's columns (up to case
    and punctuation), then the one giving most names."""
    src = mapping.source
    if src.kind != "csv" or src.columns or len(header) != 1:
        return None
    wanted = mapping.source_columns()
    best: tuple[tuple[int, int], str, list[str]] | None = None
    for sep in DELIMITERS:
        if sep == src.delimiter or sep not in header[0]:
            continue
        names = [n.strip().strip('"').strip() for n in header[0].split(sep)]
        if sum(1 for n in names if n) < 2:
            continue
        spelt = {normalise(n) for n in names}
        score = (sum(1 for c in wanted if normalise(c) in spelt), len(names))
        if best is None or score > best[0]:
            best = (score, sep, names)
    return None if best is None else (best[1], best[2])


def delimiter_problem(mapping: MappingConfig, header: list[str]) -> tuple[str, str] | None:
    """(message, hint) when the header was read with the wrong delimiter (:func:`split_header`)."""
    found = split_header(mapping, header)
    if found is None:
        return None
    sep, names = found
    src = mapping.source
    written = "\\t" if sep == "\t" else sep  # as YAML writes it in double quotes
    message = (
        f"the header of {src.label} was read as one column, {header[0]!r}: it is"
        f" {DELIMITERS[sep]}-separated ({len(names)} names: {', '.join(map(repr, names))}),"
        f" but source.delimiter is {src.delimiter!r}"
    )
    hint = (
        f'set source: {{delimiter: "{written}"}} in the mapping (source: {{path: {src.path},'
        f' delimiter: "{written}"}})'
    )
    return message, hint
