"""The factory client: protocol, HTTP client and server, the embedded local factory, and the quality gate.

``make_factory_client(url)`` returns an ``HttpFactoryClient`` for a remote factory or the
in-process ``LocalFactory``; both implement ``FactoryClient``. ``targets_from_report`` turns a
diagnosis report into weighted targets. See docs/factory.md.

The HTTP server's names (``create_app``, ``BackgroundServer``, ``openapi_schema``) load on first use: a client or
the embedded factory never imports the web framework and the MCP surface the server needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from factory_client.archive import ArchiveLimits, extract_files, load_archive, pack_archive, sha256_hex
from factory_client.base import FactoryClient, FactoryResult
from factory_client.client import HttpFactoryClient, make_factory_client
from factory_client.errors import (
    FactoryBusy,
    FactoryError,
    FactoryProtocolError,
    IdempotencyConflict,
    PackRefused,
    RequestFailed,
)
from factory_client.gate import HeldoutIndex, QualityGate, resolve_baseline, task_content_hash, token_jaccard
from factory_client.local import GENERATOR, GENERATOR_VERSION, FactoryLimits, LocalFactory
from factory_client.protocol import (
    GATES,
    PROTOCOL_VERSION,
    DroppedVariant,
    ErrorBody,
    GateConfig,
    GateCount,
    GateReport,
    PackInfo,
    PackList,
    RequestState,
    RequestStatus,
    ServiceInfo,
    SubmitResponse,
    TargetEvidence,
    TaskRejection,
    VariantRequest,
    WeaknessTarget,
)
from factory_client.targets import target_for_kind, targetable, targets_from_report

if TYPE_CHECKING:
    from factory_client.server import BackgroundServer, create_app, openapi_schema

_SERVER_NAMES = frozenset({"BackgroundServer", "create_app", "openapi_schema"})

__all__ = [
    "GATES",
    "GENERATOR",
    "GENERATOR_VERSION",
    "PROTOCOL_VERSION",
    "ArchiveLimits",
    "BackgroundServer",
    "DroppedVariant",
    "ErrorBody",
    "FactoryClient",
    "FactoryBusy",
    "FactoryError",
    "FactoryLimits",
    "FactoryProtocolError",
    "FactoryResult",
    "GateConfig",
    "GateCount",
    "GateReport",
    "HeldoutIndex",
    "HttpFactoryClient",
    "IdempotencyConflict",
    "LocalFactory",
    "PackInfo",
    "PackList",
    "PackRefused",
    "QualityGate",
    "RequestFailed",
    "RequestState",
    "RequestStatus",
    "ServiceInfo",
    "SubmitResponse",
    "TargetEvidence",
    "TaskRejection",
    "VariantRequest",
    "WeaknessTarget",
    "create_app",
    "extract_files",
    "load_archive",
    "make_factory_client",
    "openapi_schema",
    "pack_archive",
    "resolve_baseline",
    "sha256_hex",
    "target_for_kind",
    "targetable",
    "targets_from_report",
    "task_content_hash",
    "token_jaccard",
]


def __getattr__(name: str) -> Any:
    """Load the HTTP server's names on first use."""
    if name in _SERVER_NAMES:
        return getattr(importlib.import_module("factory_client.server"), name)
    raise AttributeError(f"module 'factory_client' has no attribute {name!r}")
