"""The package's version (reports and the mapping fingerprint carry it)."""

__version__ = "0.1.0"
