"""recordsync: push CSV and Parquet exports into a CRM record service through batch upserts."""

__version__ = "0.1.0"
