"""Runtime settings of a run: which record service, with which key.

The target is taken from the first of these that is given:

1. ``--base-url`` (key from ``RECORDSYNC_API_KEY``)
2. ``--profile NAME`` (``configs/profiles.yaml``: base_url, and api_key_env = the name of the
   environment variable holding the key)
3. env ``RECORDSYNC_BASE_URL`` (key from ``RECORDSYNC_API_KEY``)
4. env ``RECORDSYNC_PROFILE`` (a profile name)
5. the pipeline's ``target:`` (a profile name)
6. nothing, or the profile name ``sandbox`` when no profile of that name is defined: the
   embedded sandbox on ``.recordsync/sandbox.db`` with a generated key, served on
   127.0.0.1 for the length of the run.

Keys are never read from files: a profile names the variable that holds its key, and a
profile's key never falls back to ``RECORDSYNC_API_KEY`` (so a staging profile cannot pick up
a production key by accident).

A profile may carry a ``notify:`` section (the pipeline file's shape,
:class:`recordsync.config.unattended.NotifySettings`): the alerts of the runs into that
target, used when the pipeline file has no ``notify:`` of its own.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from pydantic import ValidationError

from recordsync.config.unattended import NotifySettings
from recordsync.config.yamlmarks import load_yaml
from recordsync.core.errors import AuthError, ConfigError
from recordsync.core.secret import Secret

ENV_BASE_URL = "RECORDSYNC_BASE_URL"
ENV_API_KEY = "RECORDSYNC_API_KEY"
ENV_PROFILE = "RECORDSYNC_PROFILE"
DEFAULT_PROFILES = Path("configs/profiles.yaml")
DEFAULT_SANDBOX_DB = Path(".recordsync/sandbox.db")
_PROFILE_KEYS = frozenset({"base_url", "api_key_env", "description", "notify"})
SANDBOX_PROFILE = "sandbox"
NO_TARGET = "no target configured"


@dataclass(frozen=True, slots=True)
class Target:
    """Where a run sends, and where each value came from (for messages)."""

    base_url: str
    api_key: Secret
    origin: str
    key_origin: str
    embedded: bool = False
    sandbox_db: str | None = None
    """The embedded sandbox's database file (None for a real service)."""
    chosen_by: str = ""
    """Embedded sandbox: why (``no target configured``, ``pipeline target sandbox``, ...)."""
    state_name: str | None = None
    """What the state store calls this target, when not :attr:`name` (a sandbox served on a
    new loopback port each time, named by its database file)."""
    notify: NotifySettings | None = None
    """The ``notify:`` of the profile the target came from (None: none)."""

    @property
    def state_identity(self) -> str:
        """The name the state store binds a pipeline's state to (with the users' ids:
        :mod:`recordsync.state.targets`)."""
        return self.state_name or self.name

    @property
    def name(self) -> str:
        """What the report calls the target: the base URL, or for the embedded sandbox
        ``embedded-sandbox:<db file>`` (stable across runs, unlike its loopback port)."""
        if self.embedded:
            return f"embedded-sandbox:{self.sandbox_db}"
        return self.base_url

    def auth_hint(self) -> str:
        if self.embedded:
            return "the embedded sandbox rejected its own key: delete .recordsync/ and run again"
        return (
            f"the API key comes from {self.key_origin}: set it to a valid key for {self.base_url}"
        )


@dataclass(frozen=True, slots=True)
class TargetChoice:
    """The resolved choice before anything is started: None base_url = the embedded sandbox."""

    base_url: str | None
    key_env: str
    origin: str
    notify: NotifySettings | None = None
    """The profile's ``notify:`` section."""


def redact_url(url: str) -> str:
    """``url`` as messages may show it: a user:password@ part and a query string (which can
    hold ``api_key=...``) or fragment are replaced by stars."""
    scheme, sep, rest = url.partition("//")
    if not sep:
        scheme, rest = "", url
    head, slash, path = rest.partition("/")
    if "@" in head:
        head = "***@" + head.rsplit("@", 1)[1]
    text = f"{scheme}{sep}{head}{slash}{path}"
    for mark in ("?", "#"):
        if mark in text:
            text = text.split(mark, 1)[0] + mark + "***"
    return text


def _check_url(url: str, origin: str) -> str:
    shown = redact_url(url)
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"base URL {shown!r} (from {origin}) must start with http:// or https://")
    if "@" in url.split("//", 1)[1].split("/", 1)[0]:
        raise ConfigError(
            f"base URL {shown!r} from {origin} carries credentials; give the key through an env"
            " var",
            hint=f"remove user:password@ from the URL and set {ENV_API_KEY}",
        )
    if "?" in url or "#" in url:
        raise ConfigError(
            f"base URL {shown!r} from {origin} has a query string or fragment; a base URL is"
            " http(s)://host[:port][/path] and a key never goes in it",
            hint=f"remove everything from '?' on and give the key through {ENV_API_KEY} (or the"
            " profile's api_key_env)",
        )
    try:
        httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConfigError(
            f"base URL {shown!r} (from {origin}) is not a valid URL: {exc}",
            hint="write it as http(s)://host[:port][/path]",
        ) from None
    return url.rstrip("/")


def load_profile(name: str, path: Path) -> tuple[str, str] | None:
    """(base_url, api_key_env) of profile ``name`` in ``path``; None for the built-in
    ``sandbox`` profile (the embedded sandbox) when the file does not define it."""
    if name == SANDBOX_PROFILE and not _defines(path, name):
        return None
    if not path.is_file():
        raise ConfigError(f"profile {name!r} asked for, but {path} does not exist", file=str(path))
    data: Any = load_yaml(path)[0]
    profiles = data.get("profiles", data) if isinstance(data, dict) else None
    if not isinstance(profiles, dict) or name not in profiles:
        known = ", ".join(sorted(profiles)) if isinstance(profiles, dict) else "none"
        raise ConfigError(f"no profile {name!r} (known: {known})", file=str(path), key=name)
    entry = profiles[name]
    if not isinstance(entry, dict):
        raise ConfigError(
            "a profile is a mapping with base_url and api_key_env", file=str(path), key=name
        )
    if "api_key" in entry:
        raise ConfigError(
            "API keys never go in files",
            file=str(path),
            key=f"{name}.api_key",
            hint="put the key in an environment variable and name it with api_key_env",
        )
    unknown = set(entry) - _PROFILE_KEYS
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(sorted(map(str, unknown)))}; allowed: "
            + ", ".join(sorted(_PROFILE_KEYS)),
            file=str(path),
            key=name,
        )
    if not isinstance(entry.get("base_url"), str):
        raise ConfigError("base_url is required (a string)", file=str(path), key=f"{name}.base_url")
    key_env = entry.get("api_key_env", ENV_API_KEY)
    if not isinstance(key_env, str) or not key_env:
        raise ConfigError(
            "api_key_env must name an environment variable",
            file=str(path),
            key=f"{name}.api_key_env",
        )
    return str(entry["base_url"]), key_env


def profile_notify(name: str, path: Path) -> NotifySettings | None:
    """The ``notify:`` section of profile ``name`` in ``path`` (None: none, or no such
    profile); a ConfigError naming the file and the key when it is not valid."""
    if not path.is_file():
        return None
    data: Any = load_yaml(path)[0]
    profiles = data.get("profiles", data) if isinstance(data, dict) else None
    entry = profiles.get(name) if isinstance(profiles, dict) else None
    if not isinstance(entry, dict) or entry.get("notify") is None:
        return None
    try:
        return NotifySettings.model_validate(entry["notify"])
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"] if not (isinstance(p, str) and "[" in p))
        key = f"{name}.notify" + (f".{where}" if where else "")
        raise ConfigError(
            f"{first['msg'].removeprefix('Value error, ')}",
            file=str(path),
            key=key,
            hint="see the notify: section in docs/scheduling.md",
        ) from None


def _defines(path: Path, name: str) -> bool:
    try:
        data = load_yaml(path)[0] if path.is_file() else None
    except ConfigError:
        return True  # let load_profile report the broken file
    profiles = data.get("profiles", data) if isinstance(data, dict) else None
    return isinstance(profiles, dict) and name in profiles


def choose_target(
    *,
    base_url: str | None = None,
    profile: str | None = None,
    pipeline_target: str | None = None,
    env: Mapping[str, str] | None = None,
    profiles_path: Path | None = None,
) -> TargetChoice:
    """Apply the precedence above (no network, nothing started)."""
    env = os.environ if env is None else env
    path = profiles_path or Path(env.get("RECORDSYNC_PROFILES", str(DEFAULT_PROFILES)))
    if base_url:
        return TargetChoice(_check_url(base_url, "--base-url"), ENV_API_KEY, "--base-url")
    names = [(profile, "--profile")]
    if env.get(ENV_BASE_URL) and not profile:
        return TargetChoice(_check_url(env[ENV_BASE_URL], ENV_BASE_URL), ENV_API_KEY, ENV_BASE_URL)
    names += [(env.get(ENV_PROFILE), ENV_PROFILE), (pipeline_target, "pipeline target")]
    for name, origin in names:
        if name:
            found = load_profile(name, path)
            if found is None:
                return TargetChoice(None, ENV_API_KEY, f"{origin} {name}")
            url, key_env = found
            notify = profile_notify(name, path)
            return TargetChoice(
                _check_url(url, f"profile {name}"), key_env, f"{origin} {name}", notify
            )
    return TargetChoice(None, ENV_API_KEY, NO_TARGET)


def resolve_key(choice: TargetChoice, env: Mapping[str, str] | None = None) -> Secret:
    """The API key for a real target; a missing one is an AuthError naming the variable."""
    env = os.environ if env is None else env
    value = env.get(choice.key_env, "").strip()
    if not value:
        raise AuthError(
            f"no API key for {choice.base_url} (target from {choice.origin})",
            hint=f"set the environment variable {choice.key_env} to the organization's API key",
        )
    bad = next((i for i, c in enumerate(value) if not " " < c < "\x7f"), None)
    if bad is not None:
        char = value[bad]
        what = (
            "a line break"
            if char in "\r\n"
            else "a space or control character"
            if char.isascii()
            else "a non-ASCII character"
        )
        raise ConfigError(
            f"the API key in {choice.key_env} cannot be sent as an HTTP header: character"
            f" {bad + 1} of {len(value)} is {what} (a key is printable ASCII with no spaces)",
            key=choice.key_env,
            hint=f"set {choice.key_env} to the key exactly as issued (no quotes, line breaks or"
            " typographic characters from copying it out of a document); nothing was sent",
        )
    return Secret(value)


@contextmanager
def open_target(
    choice: TargetChoice,
    *,
    env: Mapping[str, str] | None = None,
    sandbox_db: Path = DEFAULT_SANDBOX_DB,
    seed: str | Path | None = None,
) -> Iterator[Target]:
    """Yield the Target; for the embedded sandbox, serve it on loopback while the block runs."""
    if choice.base_url is not None:
        key = resolve_key(choice, env)
        yield Target(
            choice.base_url, key, choice.origin, f"env {choice.key_env}", notify=choice.notify
        )
        return
    from recordsync.sandbox.app import create_app
    from recordsync.sandbox.server import run_in_thread

    key = Secret("sk_live_" + secrets.token_urlsafe(24))
    app = create_app(sandbox_db, seed=seed, api_key=key)
    try:
        with run_in_thread(app) as url:
            yield Target(
                url,
                key,
                f"embedded sandbox {sandbox_db} ({choice.origin})",
                "generated",
                embedded=True,
                sandbox_db=str(sandbox_db),
                chosen_by=choice.origin,
            )
    finally:
        store = getattr(app.state, "store", None)
        if store is not None:
            store.close()


def sandbox_db_for(seed: Path | None) -> Path:
    """The embedded sandbox's database: the default one, or one per custom seed file (so the
    records of one seed's object types never appear under another seed's types)."""
    if seed is None:
        return DEFAULT_SANDBOX_DB
    return DEFAULT_SANDBOX_DB.with_name(f"sandbox-{seed.stem}.db")
