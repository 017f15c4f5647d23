"""Flows: Prefect flows, MLflow tracking, settings and the ``gymloop`` command line."""
