"""Orchestrator integrations: thin wrappers over :func:`recordsync.run.pipeline.run_pipeline`.

- :mod:`recordsync.integrations.outcome`: what every wrapper shares (run a pipeline file as
  ``recordsync run`` does, the outcome as metadata, success or failure); no orchestrator needed.
- :mod:`recordsync.integrations.dagster`: ``recordsync_asset(...)`` (``recordsync[dagster]``).
- :mod:`recordsync.integrations.airflow`: ``RecordsyncOperator`` (``recordsync[airflow]``).

docs/scheduling.md shows them in use.
"""
