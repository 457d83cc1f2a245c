"""Whole runs: run_pipeline, the runner, plans and checks, retry, guards, the target."""
