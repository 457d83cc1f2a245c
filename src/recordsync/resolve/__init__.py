"""Resolution of references in source rows (owners → user ids)."""

from recordsync.resolve.owners import OwnerResolver, load_owners_file

__all__ = ["OwnerResolver", "load_owners_file"]
