"""The factory interface the loop programs against, and what a finished request yields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from arena.core.pack import Pack
from factory_client.protocol import GateReport, RequestStatus, VariantRequest


@dataclass(frozen=True)
class FactoryResult:
    """The validated outcome of a finished request.

    Attributes:
        request_id: The request.
        packs: Validated packs, by variant index.
        gate_report: What the quality gate accepted and rejected.
    """

    request_id: str
    packs: list[Pack] = field(default_factory=list)
    gate_report: GateReport = field(default_factory=GateReport)


@runtime_checkable
class FactoryClient(Protocol):
    """A factory: the embedded ``LocalFactory`` or a remote one through ``HttpFactoryClient``."""

    def submit(self, request: VariantRequest) -> str:
        """Submit a request and return its id; the same idempotency key returns the same id."""
        ...

    def status(self, request_id: str) -> RequestStatus:
        """Return where the request stands."""
        ...

    def packs(self, request_id: str) -> list[Pack]:
        """Return the finished request's packs, every one validated (all or none)."""
        ...

    def gate_report(self, request_id: str) -> GateReport:
        """Return the quality gate's report of a finished request."""
        ...

    def request(self, request: VariantRequest, timeout: float = 600.0) -> FactoryResult:
        """Submit, wait until done, and return the validated packs and the gate report."""
        ...
