"""Gyms as services: episodes as sessions over MCP, an OpenEnv environment and Docker containers.

Every surface runs the same :class:`~arena.core.gym.Gym` dispatch and verifier; the OpenEnv surface is in
:mod:`arena.serve.openenv_surface` (imported on demand: openenv-core is heavy) and the Docker image and
backend in :mod:`arena.serve.docker_image` and :mod:`arena.serve.docker_backend`.
"""

from arena.serve.mcp_surface import EPISODE_TOOLS, McpGym, build_mcp_server
from arena.serve.runner import http_app, serve_http, serve_stdio
from arena.serve.session import (
    CheckOutcome,
    EpisodeOutcome,
    GymService,
    ServedObservation,
    ServedVerdict,
    ServeError,
    ServeLimits,
    TaskSummary,
    outcome_of,
    resolve_pack,
    served_observation,
)

__all__ = [
    "EPISODE_TOOLS",
    "CheckOutcome",
    "EpisodeOutcome",
    "GymService",
    "McpGym",
    "ServeError",
    "ServeLimits",
    "ServedObservation",
    "ServedVerdict",
    "TaskSummary",
    "build_mcp_server",
    "http_app",
    "outcome_of",
    "resolve_pack",
    "serve_http",
    "served_observation",
    "serve_stdio",
]
