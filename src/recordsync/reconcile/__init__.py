"""Reconcile stage: check batch answers before trusting them; retry a run from its report."""
