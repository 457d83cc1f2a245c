"""Reconcile stage: check batch answers before trusting them (retrying a run from its report
is :mod:`recordsync.run.retry`, beside the runner)."""
