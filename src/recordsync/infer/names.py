"""Header names compared with field names: normalised words and common synonyms.

``normalize("E-mail Address")`` is ``"email address"``: lower case, accents dropped, every
run of punctuation, ``_`` and ``-`` a space, camelCase split, ``e mail`` read as ``email``.
A header names a field when, normalised, it is the field's name or display name, one of the
field's synonyms below (what CRM exports call it), or one of those with the object's
singular in front (``Contact Email``, ``Company Phone``).
"""

from __future__ import annotations

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
        "created on",
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
        "closed date", "closed on",
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

def name_score(header: str, field_name: str, display: str, singular: str) -> tuple[float, str]:
    """(score, evidence) for ``header`` naming a field: 1.0 its name or display name, 0.9 a
    synonym, 0.6 a header whose words contain the field's words (``Work Email Addr``)."""
    h = normalize(header)
    own = {normalize(field_name), normalize(display)}
    prefixes = ("", f"{normalize(singular)} ", "primary ", "main ")
    if any(_same(h, p + o) for o in own for p in prefixes):
        return 1.0, f"header {header!r} is the field's name"
    synonyms = {normalize(s) for s in SYNONYMS.get(field_name, ())}
    if any(_same(h, p + s) for s in synonyms for p in prefixes):
        return 0.9, f"header {header!r} is a usual name for {field_name}"
    words = set(h.split())
    for o in sorted(own | synonyms, key=len, reverse=True):
        if o and len(o) > 2 and set(o.split()) <= words:
            return 0.6, f"header {header!r} contains {o!r}"
    return 0.0, ""


def _same(a: str, b: str) -> bool:
    """Equal words, or equal once spaces are dropped (``LinkedIn``, read ``linked in``, is
    ``linkedin``; ``Lead Score`` is ``leadscore``)."""
    return a == b or a.replace(" ", "") == b.replace(" ", "")


def is_one_of(header: str, names: tuple[str, ...]) -> bool:
    h = normalize(header)
    return any(_same(h, normalize(n)) for n in names)
