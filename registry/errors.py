"""The registry's one exception type."""

from __future__ import annotations


class RegistryError(RuntimeError):
    """The registry refused an operation; the message names the database URL, id or revision concerned."""
