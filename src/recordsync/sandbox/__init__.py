"""The local record service (sandbox): the hosted service's interface on SQLite.

    create_app(db_path, seed=None, api_key=None, faults=None)  → a Starlette app
    recordsync.sandbox.server.run_in_thread(app)               → base URL, over loopback

See docs/sandbox.md for the decisions taken where the interface is silent.

``create_app`` is imported when first asked for, so that reading the seed
(:mod:`.seed`, :mod:`.catalog`: ``recordsync validate`` checks mappings against the embedded
sandbox's schema) does not import the web stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recordsync.sandbox.app import create_app


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from recordsync.sandbox.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["create_app"]
