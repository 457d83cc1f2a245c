"""``transform: url_domain / email_domain / domain``: a URL or an e-mail → its domain, and a
row error naming the column and the value when there is none."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.config import load_mapping
from recordsync.map.domains import transform_one
from recordsync.map.engine import BatchMapper

GOOD = [
    ("https://www.Example.com/about?x=1", "example.com"),
    ("example.com", "example.com"),
    ("EXAMPLE.com.", "example.com"),
    ("www.example.com", "example.com"),
    ("www2.example.com", "www2.example.com"),
    ("http://user:secret@Example.COM:8080/x#top", "example.com"),
    ("//cdn.example.co.uk/x.js", "cdn.example.co.uk"),
    ("ftp://files.example.org", "files.example.org"),
    ("https://Bücher.example/", "bücher.example"),
    ("xn--bcher-kva.example", "xn--bcher-kva.example"),
    ("example.com:443", "example.com"),
    ("  https://example.com  ", "example.com"),
]
BAD = [
    "not a site",
    "http://",
    "localhost",
    "http://10.0.0.1/",
    "http://[::1]/",
    "http://example.com:99999/",
    "http://example.com:port/",
    "example..com",
    "-example.com",
    "a_b.com",
    "https://ex ample.com",
    "@example.com",
    "https://" + "a" * 64 + ".com",
]


@pytest.mark.parametrize(("cell", "domain"), GOOD)
def test_url_domain(cell: str, domain: str) -> None:
    assert transform_one("url_domain", cell) == (domain, None, None)
    assert transform_one("domain", cell) == (domain, None, None)


@pytest.mark.parametrize("cell", BAD)
def test_garbage_has_no_url_domain(cell: str) -> None:
    value, reason, _ = transform_one("url_domain", cell)
    assert value is None and reason is not None and "(transform: url_domain)" in reason


@pytest.mark.parametrize(
    ("cell", "domain"),
    [
        ("Ann.Lee@Sales.Example.com", "sales.example.com"),
        ("mailto:ann@example.com", "example.com"),
        (" ann@example.com. ", "example.com"),
        ("ann@bücher.example", "bücher.example"),
    ],
)
def test_email_domain(cell: str, domain: str) -> None:
    assert transform_one("email_domain", cell) == (domain, None, None)
    assert transform_one("domain", cell) == (domain, None, None)


@pytest.mark.parametrize(
    "cell", ["ann@", "@example.com", "ann", "ann@localhost", "a b@example.com", "https://x.com"]
)
def test_garbage_has_no_email_domain(cell: str) -> None:
    value, reason, _ = transform_one("email_domain", cell)
    assert value is None and reason is not None and "e-mail address" in reason


labels = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)


@given(
    domain=st.lists(labels, min_size=1, max_size=3).map(".".join),
    tld=st.sampled_from(["com", "io", "co.uk", "de"]),
    scheme=st.sampled_from(["", "http://", "https://", "HTTPS://", "//"]),
    www=st.booleans(),
    port=st.sampled_from(["", ":80", ":8443"]),
    rest=st.sampled_from(["", "/", "/about?x=1", "#top", "?q=a/b"]),
    user=st.sampled_from(["", "ann@", "ann:pw@"]),
)
def test_any_url_of_a_domain_gives_that_domain(
    domain: str, tld: str, scheme: str, www: bool, port: str, rest: str, user: str
) -> None:
    host = f"{domain}.{tld}"
    if host.startswith("www."):
        return
    url = f"{scheme}{user}{'www.' if www else ''}{host.upper()}{port}{rest}"
    if scheme == "" and user:
        url = "http://" + url  # without a scheme, user@host reads as an e-mail for `domain`
    assert transform_one("url_domain", url)[0] == host
    assert transform_one("domain", url)[0] == host
    assert transform_one("email_domain", f"someone@{host}")[0] == host


COMPANIES = """\
object_type: companies
source: {path: c.csv}
name: Company
fields:
  domain: {column: Website, transform: domain}
  description: {column: Contact, transform: email_domain}
"""


def test_a_cell_without_a_domain_is_a_row_error_naming_column_and_value(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(COMPANIES)
    m = BatchMapper(load_mapping(tmp_path / "m.yaml"), base_dir=tmp_path, schema=None, users=None)
    batch = pa.RecordBatch.from_pylist(
        [
            {"Company": "Acme", "Website": "https://www.Acme.com/about", "Contact": "a@acme.com"},
            {"Company": "Bad", "Website": " not a site ", "Contact": ""},
            {"Company": "Blank", "Website": "", "Contact": "ann"},
        ]
    )
    out = m.map_batch(batch)
    assert out.payloads[0]["fields"] == {"domain": "acme.com", "description": "acme.com"}
    assert out.errors[0] is None
    assert out.errors[1] == (
        "column 'Website' → field 'domain': ' not a site ' is not a URL, domain or e-mail "
        "address with a domain (e.g. example.com) (transform: domain)"
    )
    assert out.errors[2] == (
        "column 'Contact' → field 'description': 'ann' is not an e-mail address with a domain"
        " (e.g. ann@example.com) (transform: email_domain)"
    )
