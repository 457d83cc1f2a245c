"""Infer a mapping from a source file and a schema (``recordsync init`` and ``import``)."""
