"""Offline-safe defaults for the libraries gymloop drives (set before they are imported)."""

from __future__ import annotations

import os

OFFLINE_DEFAULTS = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "FASTMCP_CHECK_FOR_UPDATES": "off",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "600",
}
"""Variables that keep libraries from reaching the internet on import or at run time, and give Prefect's
temporary API server time to start on a loaded machine (its own limit, 20 s, failed every round under load)."""


def apply_offline_defaults() -> None:
    """Set each offline switch unless the user already set it."""
    for key, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(key, value)
