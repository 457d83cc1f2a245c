"""The local record service (sandbox): the hosted service's interface on SQLite.

    create_app(db_path, seed=None, api_key=None, faults=None)  → a Starlette app
    recordsync.sandbox.server.run_in_thread(app)               → base URL, over loopback

See docs/sandbox.md for the decisions taken where the interface is silent.
"""

from __future__ import annotations

from recordsync.sandbox.app import create_app

__all__ = ["create_app"]
