"""Errors of the factory client and the local factory."""

from __future__ import annotations


class FactoryError(RuntimeError):
    """A factory request could not be served; the message says why and names the values."""


class FactoryProtocolError(FactoryError):
    """A factory answer broke the protocol (unknown version, malformed body, unexpected status)."""


class PackRefused(FactoryError):
    """A pack from a factory was refused before reaching the registry.

    Args:
        pack_id: The pack's id as the listing gave it.
        reason: Why it was refused.
    """

    def __init__(self, pack_id: str, reason: str) -> None:
        super().__init__(f"pack {pack_id[:16]} refused: {reason}")
        self.pack_id = pack_id
        self.reason = reason


class RequestFailed(FactoryError):
    """The factory reported the request as failed, or it did not finish in time."""


class IdempotencyConflict(FactoryError):
    """An idempotency key was reused with a different request body."""


class FactoryBusy(FactoryError):
    """The factory's queue is full (or it is shutting down): retry later."""
