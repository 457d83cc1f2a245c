"""The ``httpx.Client`` the record service client is given by default
(:func:`make_http_client`): keep-alive, our timeouts, no redirect following, no cookie jar,
and for a plain-http target no TLS context at all."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=120.0, write=60.0, pool=10.0)

def make_http_client(
    timeout: httpx.Timeout = DEFAULT_TIMEOUT, *, base_url: str | None = None
) -> httpx.Client:
    """A keep-alive client with our timeouts and no redirect following.

    For a plain-http ``base_url`` (the sandbox) the client builds no TLS context, which costs
    about 60 ms of loading the CA bundle, and it refuses any https URL: it could not check a
    certificate. Otherwise (https, or no URL given) certificates are verified as usual."""
    plain = base_url is not None and urlsplit(base_url).scheme == "http"
    return _KeyOnlyClient(
        timeout=timeout,
        follow_redirects=False,
        limits=httpx.Limits(max_connections=4, max_keepalive_connections=4),
        headers={"user-agent": "recordsync", "accept": "application/json"},
        verify=not plain,
        mounts={"https://": _RefuseTLS()} if plain else None,
    )


class _NoCookies(httpx.Cookies):
    """A cookie jar that keeps nothing: answers' ``Set-Cookie`` headers are ignored."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


class _KeyOnlyClient(httpx.Client):
    """An ``httpx.Client`` without a cookie jar. The record service authenticates every
    request by its key; a cookie (a load balancer's, say) is never sent back. Reading each
    answer's ``Set-Cookie`` headers into a jar costs httpx about 0.25 ms of interpreter time
    a request, between an answer and the next chunk's request (of about 1.7 ms in all)."""

    def __init__(self, **kwargs: Any) -> None:
        self._none = _NoCookies()
        super().__init__(**kwargs)

    @property
    def cookies(self) -> httpx.Cookies:
        return self._none

    @cookies.setter
    def cookies(self, cookies: object) -> None:
        if cookies:
            raise ValueError("this client keeps no cookies (the service authenticates by key)")


class _RefuseTLS(httpx.BaseTransport):
    """The https transport of a client made for a plain-http target (no TLS context)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        raise httpx.UnsupportedProtocol(
            f"{request.url.copy_with(query=None)}: this client was made for a plain-http"
            " target and cannot check certificates",
            request=request,
        )


_DONE = httpx.ByteStream(b"")


def unbind(response: httpx.Response) -> None:
    """Break the reference cycle httpx leaves between a read response and its stream
    (``response.stream`` is bound to ``response``), so that reference counting frees the
    response, its request and the request's body at once. Left to the cyclic garbage
    collector, they wait for a full collection, which a run's frozen batches defer
    (:mod:`recordsync.tuning.gcpause`): a chunk's 38 KB body each, about 75,000 objects and
    40 MB of peak memory by the end of a 1M-row first run. Called once the body is read and
    the stream closed (``send`` without ``stream=True``)."""
    response.stream = _DONE
