"""The run's use of the state store: the hook implementing ChunkHook, per-step ledger
preparation, references by key and by field, dry-run references, the check of the target."""
