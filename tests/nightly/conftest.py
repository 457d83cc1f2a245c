"""Fixtures for the run's use of the state store: those of the store's own tests."""

from __future__ import annotations

from tests.state.conftest import prepared, store

__all__ = ["prepared", "store"]
