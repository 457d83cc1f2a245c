"""Header names compared with field names: normalised words and common synonyms.

``normalize("E-mail Address")`` is ``"email address"``: lower case, accents dropped, every
run of punctuation, ``_`` and ``-`` a space, camelCase split, ``e mail`` read as ``email``.
A header names a field when, normalised, it is the field's name or display name (or one of
the alternatives a display name gives with ``/``: ``State / Region``), one of the field's
synonyms below (what CRM exports call it), or one of those with the object's singular in
front (``Contact Email``, ``Company Phone``). Words are compared with and without the spaces
between them (``LASTNAME`` is ``last name``), a trailing number is a numbered copy
(``PHONE1``, ``Phone 2``: the first one wins), and a long name one typo away
(``FIRSNAME``) is a close spelling, scored below an exact one.
"""

from __future__ import annotations

import re

from recordsync.core.suggest import normalize

SYNONYMS: dict[str, tuple[str, ...]] = {
    "email": (
        "email address", "mail", "email id", "work email", "primary email", "business email",
        "emailaddress", "contact email",
    ),
    "phone": (
        "phone number", "mobile", "mobile phone", "mobile number", "cell", "cell phone",
        "telephone", "tel", "work phone", "business phone", "main phone", "phone no",
        "contact number", "cellphone",
    ),
    "job_title": ("title", "position", "role", "job", "job role", "designation", "jobtitle"),
    "lifecycle_stage": (
        "stage", "lifecycle", "lifecycle stage", "status", "lead status", "contact stage",
    ),
    "lead_score": ("score", "lead score", "rating", "leadscore"),
    "newsletter_opt_in": (
        "newsletter", "opt in", "subscribed", "marketing opt in", "email opt in",
        "newsletter subscriber", "subscribe", "optin",
    ),
    "last_contacted": (
        "last contact", "last contacted date", "last contact date", "last activity",
        "last activity date", "last touch", "last touched",
    ),
    "signed_up_at": (
        "signed up", "signup", "sign up date", "signup date", "created", "created date",
        "created at", "date created", "create date", "registered", "registration date",
        "created on", "subscription date", "customer since", "member since", "join date",
        "joined", "date joined",
    ),
    "tags": ("labels", "tag", "segments", "segment", "categories"),
    "website": ("web site", "url", "homepage", "home page", "web", "site", "personal website"),
    "domain": (
        "website", "web site", "company website", "url", "homepage", "home page", "web",
        "company domain", "website url", "site", "email domain",
    ),
    "linkedin_url": ("linkedin", "linkedin profile", "linkedin page", "linkedin company page"),
    "industry": ("sector", "vertical", "business type", "industry type"),
    "employee_count": (
        "employees", "number of employees", "no of employees", "num employees", "headcount",
        "head count", "staff", "employee count", "company size", "size", "nb employees",
    ),
    "annual_revenue": ("revenue", "annual revenue", "turnover", "yearly revenue", "arr"),
    "founded_on": (
        "founded", "founded date", "founding date", "date founded", "established",
        "incorporated", "incorporation date", "founded in",
    ),
    "description": ("about", "summary", "company description", "overview", "bio", "profile"),
    "stage": ("deal stage", "pipeline stage", "opportunity stage", "status", "sales stage"),
    "amount": (
        "deal value", "value", "deal amount", "deal size", "opportunity amount", "price",
        "total", "amount usd",
    ),
    "close_date": (
        "close", "expected close date", "closing date", "close by", "expected close",
        "closed date", "closed on", "date closed", "won date", "order date", "invoice date",
        "payment date", "sale date",
    ),
    "probability": ("win probability", "chance", "likelihood", "probability percent"),
    "notes": ("comments", "remarks", "note", "comment", "details", "memo"),
}
OWNER_NAMES = (
    "owner", "owner email", "account owner", "contact owner", "deal owner", "company owner",
    "assigned to", "sales rep", "rep", "account manager", "owned by", "salesperson",
    "record owner", "lead owner",
)
NAME_NAMES = ("name", "full name", "display name", "record name")
NAME_BY_TYPE: dict[str, tuple[str, ...]] = {
    "contacts": ("contact name", "contact", "person", "person name", "customer name"),
    "companies": (
        "company name", "company", "organization", "organisation", "org", "org name",
        "organization name", "account name", "account", "business name", "companyname",
    ),
    "deals": ("deal name", "deal", "opportunity", "opportunity name", "deal title"),
}
FIRST_NAMES = ("first name", "firstname", "given name", "fname", "first", "forename")
LAST_NAMES = ("last name", "lastname", "surname", "family name", "lname", "last")

COMPANY_NAMES = (
    "company", "company name", "account", "account name", "organization", "organisation",
    "organization name", "employer", "business name", "companyname",
)
"""A column naming a contact's or deal's company (``Related Company``: the words after
``related``, ``associated``, ``parent`` or ``primary``)."""
COMPANY_DOMAINS = ("company domain", "company website", "company url", "company web site")
KEY_ENTITIES: dict[str, tuple[str, ...]] = {
    "companies": ("company", "account", "organization", "organisation"),
}
"""Who a ``<word> id`` column of another record refers to, by the referenced object type."""
CUSTOMER_KEYS: dict[str, tuple[str, ...]] = {"companies": ("customer", "client")}
"""Words that name the referenced type only when the column is not the export's own key (a
deals export's ``customerID`` is its company's; a contacts export's is the contact's own)."""
LINK_WORDS = ("related", "associated", "parent", "primary", "linked")
KEY_WORDS = ("id", "key", "uuid", "guid")


def words(header: str) -> str:
    """``normalize`` with a trailing number split off a word (``phone1`` → ``phone 1``)."""
    return re.sub(r"(?<=[a-z])(?=\d+$)", " ", normalize(header))


def numbered(header: str) -> tuple[str, bool]:
    """(the header's words without a trailing number, whether there was one)."""
    w = words(header)
    base = re.sub(r"\s*\d+$", "", w)
    return (base, base != w) if base else (w, False)


def name_score(header: str, field_name: str, display: str, singular: str) -> tuple[float, str]:
    """(score, evidence) for ``header`` naming a field: 1.0 its name or display name, 0.9 a
    synonym, 0.8 a close spelling of either, 0.6 a header whose words contain the field's
    words (``Work Email Addr``); a numbered copy (``Phone 2``) scores a little less."""
    h, copy = numbered(header)
    score, why = _score(h, header, field_name, display, singular)
    return (round(score - 0.05, 2) if copy and score else score), why


def _score(h: str, header: str, field_name: str, display: str, singular: str) -> tuple[float, str]:
    own = {normalize(field_name), normalize(display)}
    own |= {normalize(part) for part in display.split("/") if normalize(part)}
    prefixes = ("", f"{normalize(singular)} ", "primary ", "main ")
    if any(_same(h, p + o) for o in own for p in prefixes):
        return 1.0, f"header {header!r} is the field's name"
    synonyms = {normalize(s) for s in SYNONYMS.get(field_name, ())}
    if any(_same(h, p + s) for s in synonyms for p in prefixes):
        return 0.9, f"header {header!r} is a usual name for {field_name}"
    if close := next((o for o in sorted(own | synonyms) if one_typo_apart(h, o)), None):
        return 0.8, f"header {header!r} is a close spelling of {close!r}"
    hwords = set(h.split())
    for o in sorted(own | synonyms, key=len, reverse=True):
        if o and len(o) > 2 and set(o.split()) <= hwords:
            return 0.6, f"header {header!r} contains {o!r}"
    return 0.0, ""


def _same(a: str, b: str) -> bool:
    """Equal words, or equal once spaces are dropped (``LinkedIn``, read ``linked in``, is
    ``linkedin``; ``Lead Score`` is ``leadscore``)."""
    return a == b or a.replace(" ", "") == b.replace(" ", "")


def one_typo_apart(a: str, b: str) -> bool:
    """One typo apart (a letter dropped, added, changed or two swapped), spaces dropped, for
    names of 7 letters or more: shorter ones are too near each other to guess."""
    a, b = a.replace(" ", ""), b.replace(" ", "")
    if a == b or min(len(a), len(b)) < 7 or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 2 and diff[1] == diff[0] + 1:
            return a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        return len(diff) == 1
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = next((k for k in range(len(short)) if short[k] != long_[k]), len(short))
    return short[i:] == long_[i + 1 :]


def is_one_of(header: str, names: tuple[str, ...], close: bool = True) -> bool:
    """Whether ``header`` is one of ``names`` (normalised; spaces, a trailing number and,
    with ``close``, one typo in a long name aside)."""
    h, _copy = numbered(header)
    normal = [normalize(n) for n in names]
    return any(_same(h, n) for n in normal) or (close and any(one_typo_apart(h, n) for n in normal))


def reference_words(header: str) -> str:
    """The header's words without a leading ``related``/``associated``/... word."""
    h, _copy = numbered(header)
    first, _, rest = h.partition(" ")
    return rest if first in LINK_WORDS and rest else h


def key_of(header: str) -> str | None:
    """For an id column (``customerID``, ``Company_Key``, ``id``): the words before the id
    word (``customer``; ``""`` for a bare ``id``); None for any other header."""
    h = words(header)
    parts = h.split()
    if parts and parts[-1] in KEY_WORDS:
        return " ".join(parts[:-1])
    tail = header.strip()
    for k in KEY_WORDS:  # CUSTOMERID, CustomerId: one word, read as customer + id
        if h == h.replace(" ", "") and len(h) >= len(k) + 4 and tail[-len(k) :] in (
            k.upper(),
            k.capitalize(),
        ):
            return h[: -len(k)]
    return None
