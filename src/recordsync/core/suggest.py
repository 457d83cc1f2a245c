"""Confident suggestions: the one known spelling a value is very likely meant to be, or None.

Used for the suggested value maps of select values and for did-you-mean hints on config keys,
object types and field names. A suggestion is pasted into a config and changes data, so a
wrong one is worse than none: spelling closeness alone is never enough (``Management
Consulting`` is not ``accounting``, ``Austria`` is not ``Australia``). A value matches a
choice, in this order of confidence:

1. the same text once normalised: case, accents, punctuation, ``_``/``-`` and spacing
   (``Computer Software`` → ``computer_software``, ``united states`` → ``United States``);
2. the same words once each is made singular and known abbreviations are spelled out, in
   any order, ignoring ``and``/``of``/``the``, or the same letters once the spaces between
   words are gone (``Leads`` → ``lead``, ``USA`` → ``United States``, ``Software,
   Computer`` → ``computer_software``, ``Non-profit`` → ``nonprofit``);
3. the same number of words, in order, each the same or a typo of it: one edit (insertion,
   deletion, swap of neighbours, or a letter replaced by one next to it on the keyboard or
   a vowel by a vowel; any other replacement counts as two) in words of 5 to 9 letters,
   two in longer ones, none in words of 4 letters or fewer, and never in the first letter
   (``Custmer`` → ``customer``; not ``Iran`` → ``Iraq``, ``Gambia`` → ``Zambia``,
   ``Iceland`` → ``Ireland``, ``Slovakia`` → ``Slovenia``); a doubled or undoubled letter
   is a typo at any length (``Wonn`` → ``won``, ``Canceled`` → ``cancelled``).

The best rule that matches wins; when it matches choices with different targets, nothing
is suggested.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache

ABBREVIATIONS = {
    "us": "united states",
    "usa": "united states",
    "uk": "united kingdom",
    "gb": "united kingdom",
    "uae": "united arab emirates",
    "mgmt": "management",
    "svc": "service",
    "svcs": "service",
    "tech": "technology",
    "intl": "international",
    "govt": "government",
    "dept": "department",
    "mfg": "manufacturing",
    "corp": "corporation",
    "inc": "incorporated",
    "ltd": "limited",
    "co": "company",
}
"""Abbreviation → its words (both sides of a comparison are spelled out)."""
STOP_WORDS = frozenset({"and", "of", "the"})
_DROP = re.compile(r"[.'’]")
_SPLIT = re.compile(r"[^0-9a-z]+")


def normalise(text: str) -> str:
    """Lower case, no accents, ``.`` and ``'`` dropped, other punctuation as one space."""
    plain = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(c for c in plain if not unicodedata.combining(c)).replace("&", " and ")
    return " ".join(_SPLIT.split(_DROP.sub("", plain))).strip()


def singular(word: str) -> str:
    """A rough singular (applied to both sides, so it only has to be consistent)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


Forms = tuple[str, tuple[str, ...], tuple[int, ...]]
"""Normalised text; its words (spelled out, singular, no stop words); their lengths as
written (before the singular)."""


@lru_cache(maxsize=65_536)
def _forms(text: str) -> Forms:
    norm = normalise(text)
    words: list[str] = []
    for w in norm.split():
        words += ABBREVIATIONS.get(w, w).split()
    kept = [w for w in words if w not in STOP_WORDS]
    return norm, tuple(singular(w) for w in kept), tuple(len(w) for w in kept)


def typo_budget(length: int) -> int:
    """Edits a word of ``length`` letters may differ by and still be a typo of another (see
    the module doc)."""
    return 0 if length <= 4 else 1 if length <= 9 else 2


def _keyboard_neighbours() -> frozenset[tuple[str, str]]:
    rows = ("1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm")
    pairs: set[tuple[str, str]] = set()
    for r, row in enumerate(rows):
        for i, key in enumerate(row):
            near = [row[j] for j in (i - 1, i + 1) if 0 <= j < len(row)]
            if r > 0:
                near += [rows[r - 1][j] for j in (i, i + 1) if j < len(rows[r - 1])]
            if r + 1 < len(rows):
                near += [rows[r + 1][j] for j in (i - 1, i) if 0 <= j < len(rows[r + 1])]
            pairs.update((key, n) for n in near)
            pairs.update((n, key) for n in near)
    pairs.update((a, b) for a in "aeiouy" for b in "aeiouy" if a != b)
    return frozenset(pairs)


NEIGHBOURS = _keyboard_neighbours()
"""Pairs of letters that are typos of each other: next to each other on a QWERTY keyboard,
or two vowels (``seperator``)."""


def distance(a: str, b: str, limit: int) -> int:
    """Edit distance with swaps of neighbours (optimal string alignment), where replacing a
    letter by one that is not a typo of it (:data:`NEIGHBOURS`) costs 2 (as deleting one and
    inserting the other: ``Iceland`` is not a typo of ``Ireland``); ``limit + 1`` when the
    lengths alone differ by more than ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1 if (ca, cb) in NEIGHBOURS else 2
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


_RUNS = re.compile(r"(.)\1+")


def _is_typo(a: str, b: str, length: int) -> bool:
    if a == b or _RUNS.sub(r"\1", a) == _RUNS.sub(r"\1", b):
        return True
    if a[:1] != b[:1]:
        return False
    budget = typo_budget(length)
    return budget > 0 and distance(a, b, budget) <= budget


def _rule(value: Forms, choice: Forms) -> int | None:
    """The rule (1, 2, 3) by which ``value`` matches ``choice``, or None."""
    if value[0] and value[0] == choice[0]:
        return 1
    words, target = value[1], choice[1]
    if not words:
        return None
    if "".join(words) == "".join(target):  # Non-profit → nonprofit
        return 2
    if len(words) != len(target):
        return None
    if sorted(words) == sorted(target):
        return 2
    longest = map(max, value[2], choice[2])
    if all(map(_is_typo, words, target, longest)):
        return 3
    return None


def confident(value: str, choices: Mapping[str, str]) -> str | None:
    """The target of the choice ``value`` is confidently a spelling of, else None.

    ``choices``: spelling → what to suggest (e.g. an option's value and its label, both →
    the option's value)."""
    want = _forms(value)
    best: int | None = None
    targets: set[str] = set()
    for spelling, target in choices.items():
        rule = _rule(want, _forms(spelling))
        if rule is None or (best is not None and rule > best):
            continue
        if best is None or rule < best:
            best, targets = rule, set()
        targets.add(target)
    return next(iter(targets)) if len(targets) == 1 else None


def did_you_mean(word: str, choices: list[str]) -> str | None:
    """The one of ``choices`` that ``word`` is confidently a misspelling of, else None."""
    return confident(word, {c: c for c in choices})


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")


def normalize(text: str) -> str:
    """Lower-case words of a header or field name, for comparison."""
    text = _CAMEL.sub(" ", text.strip())
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    words = _NON_WORD.sub(" ", text).split()
    out = " ".join(words)
    out = re.sub(r"\be mail\b", "email", out)
    return re.sub(r"\bno\b(?= of)", "number", out)
