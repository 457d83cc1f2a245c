"""Shared helpers of the orchestrator tests: a clean one-step pipeline, the extras' import."""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest


def _missing(package: str) -> None:
    """Skip, or fail under CI (as tests/read/servers.py does): these tests never skip in CI."""
    why = f"{package} is not installed: pip install -e '.[dev]' again"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{why} (CI must run this test: the dev extra installs it)")
    pytest.skip(why, allow_module_level=True)


def require(module: str) -> ModuleType:
    """Import an orchestrator package of the dev extra (a venv made before it joined the
    extra may lack it)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        _missing(module)
        raise


def require_installed(package: str) -> None:
    """As :func:`require`, without importing the package into the test process (a test that
    runs it in a subprocess)."""
    if importlib.util.find_spec(package) is None:
        _missing(package)


CLEAN_CSV = """Company Name,Website
Northwind Traders,northwind.example
Contoso Pharmaceuticals,contoso.example
Fabrikam Fibers,fabrikam.example
"""

CLEAN_MAPPING = """object_type: companies
source:
  path: clean.csv
name:
  column: Company Name
match_by: [name]
fields:
  domain:
    column: Website
    transform: domain
"""


def clean_mapping(directory: Path) -> Path:
    """A mapping file (a one-step pipeline) whose three rows are all valid: exit 0."""
    (directory / "clean.csv").write_text(CLEAN_CSV, encoding="utf-8")
    path = directory / "clean.yaml"
    path.write_text(CLEAN_MAPPING, encoding="utf-8")
    return path
