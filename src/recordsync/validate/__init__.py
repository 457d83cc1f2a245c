"""Validation of mapped values against the live schema (field types, options, users)."""

from recordsync.validate.config_check import check_mapping
from recordsync.validate.schema import FieldDef, ObjectType, Schema, SelectOption
from recordsync.validate.values import Checked, check_array, kind_of

__all__ = [
    "Checked",
    "FieldDef",
    "ObjectType",
    "Schema",
    "SelectOption",
    "check_array",
    "check_mapping",
    "kind_of",
]
