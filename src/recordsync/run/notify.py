"""Alerts to webhooks (a pipeline's ``notify:``): the message, its two shapes, its signature
and its delivery.

A message goes out when the alert conditions a run leaves differ from those the last run left
(:mod:`recordsync.run.history` decides): ``alert_raised`` with the conditions standing, or
``alert_resolved`` when none stands any more. Shapes:

    generic   the message as JSON (:func:`recordsync.run.history.message`)
    slack     Slack's incoming-webhook shape: ``{"text": ..., "blocks": [...]}``

With a ``secret_env``, the body is signed: ``X-Recordsync-Signature: sha256=<hex>``, the
HMAC-SHA256 of the raw body under the secret. A webhook is tried up to ``tries`` times (a
transport error, a 429 or a 5xx is tried again after a short pause; another 4xx is not), every
failure is logged, and nothing here raises: an alert never changes a run's outcome or exit
code. The URL (which often holds a token itself) and the secret are read from the environment
when the message is sent, travel as :class:`recordsync.core.secret.Secret` and never reach a
log line, a report or an exception.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from recordsync.config.unattended import NotifySettings, Webhook
from recordsync.core.secret import Secret, redact
from recordsync.core.version import __version__

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Recordsync-Signature"
EVENT_HEADER = "X-Recordsync-Event"
RAISED = "alert_raised"
RESOLVED = "alert_resolved"
_PAUSES: tuple[float, ...] = (0.5, 2.0, 4.0, 8.0)
"""Seconds before the 2nd, 3rd, ... attempt."""


def sign(body: bytes, secret: Secret) -> str:
    """The signature header's value for ``body``: ``sha256=`` and the HMAC-SHA256 in hex."""
    digest = hmac.new(secret.reveal().encode(), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def missing_variables(settings: NotifySettings, env: Mapping[str, str]) -> list[str]:
    """One line per webhook that cannot be used: its URL's (or its secret's) environment
    variable is not set. The run goes on (listed in its report's warnings)."""
    lines = []
    for hook in settings.webhooks:
        for var in (hook.url_env, hook.secret_env):
            if var is not None and not env.get(var):
                lines.append(
                    f"notify: webhook {hook.label}: the environment variable {var} is not"
                    " set, so no alert can go there; set it where the run is scheduled"
                )
    return lines


def slack_body(msg: Mapping[str, Any]) -> dict[str, Any]:
    """``msg`` in Slack's incoming-webhook shape."""
    target = msg.get("target") or "no target"
    if msg["event"] == RESOLVED:
        head = f":white_check_mark: recordsync {msg['pipeline']}: resolved"
        lines = ["The last run was healthy: " + ", ".join(msg["resolved"]) + " cleared."]
    else:
        head = f":rotating_light: recordsync {msg['pipeline']}: " + ", ".join(
            c["id"] for c in msg["conditions"]
        )
        lines = [f"• {c['reason']}" for c in msg["conditions"]]
    counts = msg["counts"]
    fields = [
        f"*rows read* {counts.get('rows_read', 0)}",
        f"*created* {counts.get('created', 0)}",
        f"*updated* {counts.get('updated', 0)}",
        f"*unchanged* {counts.get('rows_unchanged', 0)}",
        f"*not ok* {counts.get('rows_not_ok', 0)}",
        f"*exit code* {msg['exit_code']}",
    ]
    reasons = [f"• {r['rows']} × {r['reason']}" for r in msg["top_reasons"]]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": head[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)[:3000]}},
        {"type": "section", "fields": [{"type": "mrkdwn", "text": f} for f in fields]},
    ]
    if reasons:
        text = "*Top reasons*\n" + "\n".join(reasons)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}})
    blocks.append(
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": f"run {msg['run_id']} · target {target} · report {msg['report']}",
                }
            ],
        }
    )
    return {"text": f"{head}\n" + "\n".join(lines), "blocks": blocks}


def body_of(hook: Webhook, msg: Mapping[str, Any]) -> bytes:
    """The raw body posted to ``hook`` (what is signed)."""
    shaped = slack_body(msg) if hook.shape == "slack" else dict(msg)
    return json.dumps(shaped, ensure_ascii=False, separators=(",", ":")).encode()


class _Redacted(logging.Filter):
    """Stars for the webhooks' URLs and secrets in what the HTTP client logs (httpx logs
    every request's URL, and a webhook's URL often holds its token)."""

    def __init__(self, secrets: list[Secret]) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        clean = redact(text, *self.secrets)
        if clean != text:
            record.msg, record.args = clean, ()
        return True


_CLIENT_LOGGERS = ("httpx", "httpcore.http11", "httpcore.connection")


@dataclass(frozen=True, slots=True)
class Delivery:
    """How posting a message to one webhook went (no URL, no secret in it)."""

    webhook: str
    delivered: bool
    tries: int
    detail: str


def _retriable(status: int) -> bool:
    return status == 429 or status >= 500


def deliver(
    settings: NotifySettings,
    msg: Mapping[str, Any],
    env: Mapping[str, str],
    *,
    client: httpx.Client | None = None,
) -> list[Delivery]:
    """Post ``msg`` to every webhook of ``settings``; never raises."""
    pauses = _PAUSES
    own = client is None
    http = client if client is not None else httpx.Client(
        timeout=settings.timeout,
        follow_redirects=False,
        headers={"User-Agent": f"recordsync/{__version__}"},
    )
    hidden = [
        Secret(env.get(var) or "")
        for hook in settings.webhooks
        for var in (hook.url_env, hook.secret_env)
        if var is not None
    ]
    guard = _Redacted([s for s in hidden if s])
    for name in _CLIENT_LOGGERS:
        logging.getLogger(name).addFilter(guard)
    try:
        return [
            _deliver_one(hook, msg, env, http, settings.tries, pauses) for hook in settings.webhooks
        ]
    finally:
        for name in _CLIENT_LOGGERS:
            logging.getLogger(name).removeFilter(guard)
        if own:
            http.close()


def _deliver_one(
    hook: Webhook,
    msg: Mapping[str, Any],
    env: Mapping[str, str],
    http: httpx.Client,
    tries: int,
    pauses: tuple[float, ...],
) -> Delivery:
    url = Secret(env.get(hook.url_env, ""))
    secret = Secret(env.get(hook.secret_env, "")) if hook.secret_env is not None else None
    if not url or (secret is not None and not secret):
        missing = hook.url_env if not url else hook.secret_env
        detail = f"the environment variable {missing} is not set"
        log.warning("alert not sent to webhook %s: %s", hook.label, detail)
        return Delivery(hook.label, False, 0, detail)
    try:
        body = body_of(hook, msg)
        headers = {"Content-Type": "application/json", EVENT_HEADER: str(msg["event"])}
        if secret is not None:
            headers[SIGNATURE_HEADER] = sign(body, secret)
    except Exception as exc:  # never stops the run
        detail = redact(f"the message could not be made: {type(exc).__name__}", url, secret)
        log.error("alert not sent to webhook %s: %s", hook.label, detail)
        return Delivery(hook.label, False, 0, detail)
    detail, made = "", 0
    for attempt in range(1, tries + 1):
        made = attempt
        if attempt > 1:
            time.sleep(pauses[min(attempt - 2, len(pauses) - 1)])
        try:
            answer = http.post(url.reveal(), content=body, headers=headers)
        except httpx.HTTPError as exc:  # transport: unreachable, timeout, bad URL
            detail = redact(f"{type(exc).__name__}: {exc}", url, secret)
            log.warning(
                "webhook %s: attempt %d of %d failed: %s", hook.label, attempt, tries, detail
            )
            continue
        except Exception as exc:  # an invalid URL and the like: never stops the run
            detail = redact(f"{type(exc).__name__}: {exc}", url, secret)
            log.warning("webhook %s: %s", hook.label, detail)
            break
        if 200 <= answer.status_code < 300:
            log.info("alert %s sent to webhook %s", msg["event"], hook.label)
            return Delivery(hook.label, True, attempt, f"HTTP {answer.status_code}")
        detail = f"HTTP {answer.status_code}"
        log.warning(
            "webhook %s: attempt %d of %d answered %s", hook.label, attempt, tries, detail
        )
        if not _retriable(answer.status_code):
            break
    log.error(
        "alert %s not delivered to webhook %s (%s); it is sent again after the next run",
        msg["event"],
        hook.label,
        detail,
    )
    return Delivery(hook.label, False, made, detail)
