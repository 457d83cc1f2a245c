"""The settings of unattended runs: alerts (a pipeline's ``notify:``), the run history's
retention (``history:``) and a mapping's source-volume guard (``volume_guard:``).

Webhook URLs and signing secrets never live in files: ``url_env`` and ``secret_env`` name the
environment variables that hold them (a ``url:`` or ``secret:`` key is refused, naming the
key to use instead).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from recordsync.config.mapping_parts import Strict

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$")
_UNITS = {None: 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def share(value: Any, *, what: str) -> float:
    """``50%`` or ``0.5`` as a share in 0..1 (ValueError naming ``what`` otherwise)."""
    if isinstance(value, bool):
        raise ValueError(f"{what} is a share: write 50% or 0.5")
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise ValueError(f"{what} is a share: write 50% or 0.5, not {value!r}") from None
    elif isinstance(value, int | float):
        number = float(value)
    else:
        raise ValueError(f"{what} is a share: write 50% or 0.5, not {value!r}")
    if not 0 <= number <= 1:
        raise ValueError(f"{what} must be between 0% and 100%, not {value!r}")
    return number


def seconds(value: Any, *, what: str) -> float:
    """``90``, ``90s``, ``30m`` or ``2h`` as seconds (ValueError naming ``what`` otherwise)."""
    if isinstance(value, bool):
        raise ValueError(f"{what} is a duration: write 1800, 30m or 2h")
    if isinstance(value, int | float):
        number = float(value)
    else:
        found = _DURATION.match(str(value))
        if found is None:
            raise ValueError(f"{what} is a duration: write 1800, 30m or 2h, not {value!r}")
        number = float(found.group(1)) * _UNITS[found.group(2)]
    if number < 0:
        raise ValueError(f"{what} cannot be negative")
    return number


def _env_name(value: str, key: str) -> str:
    if not _ENV_NAME.match(value):
        raise ValueError(  # the value is not shown: it may be the URL or secret itself
            f"{key} names an environment variable (letters, digits and _, such as"
            " SLACK_WEBHOOK_URL); the URL or secret itself goes in that variable, never in a"
            " file"
        )
    return value


class Webhook(Strict):
    """A webhook that alerts are posted to."""

    url_env: str
    """The environment variable holding the webhook's URL."""
    secret_env: str | None = None
    """The environment variable holding the signing secret (HMAC-SHA256 of the body, in
    the ``X-Recordsync-Signature`` header); None: unsigned."""
    shape: Literal["generic", "slack"] = "generic"
    name: str | None = None
    """What the logs and the report call this webhook (default: its ``url_env``)."""

    @model_validator(mode="before")
    @classmethod
    def _no_secrets_in_files(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, instead in (("url", "url_env"), ("secret", "secret_env")):
                if key in data:
                    raise ValueError(
                        f"'{key}' is never written in a file: put it in an environment"
                        f" variable and name that variable with '{instead}'"
                    )
        return data

    @field_validator("url_env")
    @classmethod
    def _url_env(cls, v: str) -> str:
        return _env_name(v, "url_env")

    @field_validator("secret_env")
    @classmethod
    def _secret_env(cls, v: str | None) -> str | None:
        return None if v is None else _env_name(v, "secret_env")

    @property
    def label(self) -> str:
        return self.name or self.url_env


class AlertOn(Strict):
    """The conditions that raise an alert (each a change of state: raised once, resolved
    once)."""

    failed: bool = True
    """The run failed or was aborted (exit 2 or more)."""
    rows_not_ok: int | str | None = 0
    """More rows not ok than this: a count (``0``: any row) or a share of the rows read
    (``1%``); None: never."""
    volume_drop: bool = True
    """A step's source volume guard tripped."""
    runtime_over: float | str | None = None
    """A run longer than this (seconds, or ``30m`` / ``2h``); None: never."""

    @field_validator("rows_not_ok")
    @classmethod
    def _rows(cls, v: int | str | None) -> int | str | None:
        if isinstance(v, str):
            share(v, what="rows_not_ok")
            if not v.strip().endswith("%"):
                raise ValueError(f"rows_not_ok is a count (5) or a share (1%), not {v!r}")
        elif isinstance(v, int) and v < 0:
            raise ValueError("rows_not_ok cannot be negative")
        return v

    @field_validator("runtime_over")
    @classmethod
    def _runtime(cls, v: float | str | None) -> float | None:
        return None if v is None else seconds(v, what="runtime_over")

    def rows_not_ok_over(self, not_ok: int, rows_read: int) -> bool:
        """Whether ``not_ok`` of ``rows_read`` rows is above the threshold."""
        limit = self.rows_not_ok
        if limit is None:
            return False
        if isinstance(limit, str):
            return rows_read > 0 and not_ok / rows_read > share(limit, what="rows_not_ok")
        return not_ok > limit


class NotifySettings(Strict):
    """A pipeline's ``notify:`` section: where alerts go and what raises one."""

    webhooks: list[Webhook] = Field(min_length=1)
    alert_on: AlertOn = Field(default_factory=AlertOn)
    tries: int = Field(default=3, ge=1, le=5)
    """Attempts per webhook and message (a failed webhook never changes the run's outcome)."""
    timeout: float = Field(default=10.0, gt=0, le=60)
    """Seconds per attempt."""


class HistorySettings(Strict):
    """A pipeline's ``history:`` section."""

    retention_days: int = Field(default=90, ge=1)
    """History records and the journal of finished runs older than this are pruned after
    each run (never the ledger, nor what a resume or the next run needs)."""


class VolumeGuard(Strict):
    """A mapping's ``volume_guard:``: its source compared with the last healthy runs."""

    enabled: bool = True
    max_drop: float | str = 0.5
    """The largest drop allowed against the last healthy runs, a share (``50%`` or 0.5);
    a source with no rows where there were rows always trips the guard."""
    on_drop: Literal["skip_deletes", "skip_step"] = "skip_deletes"
    """``skip_deletes``: the step runs, its mirror deletes are refused; ``skip_step``: the
    step sends nothing (every row reported not sent) and deletes nothing."""

    @field_validator("max_drop")
    @classmethod
    def _max_drop(cls, v: float | str) -> float:
        return share(v, what="max_drop")

    @property
    def drop(self) -> float:
        return float(self.max_drop)
