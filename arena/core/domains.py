"""The gym registry: built-in gyms by name (imported when first asked for) and gyms registered from outside."""


from __future__ import annotations

import importlib
import importlib.util
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arena.core.domain import Domain

BUILTIN_DOMAINS = ("helpdesk", "tracker", "procurement", "crm")
"""Names of the gyms shipped with gymloop, in the order they are listed."""

_REGISTERED: dict[str, Domain] = {}


def register_domain(domain: Domain) -> None:
    """Make a gym defined outside gymloop available by name (call it when its module is imported).

    Raises:
        ValueError: The name is taken by a built-in gym.
    """
    if domain.name in BUILTIN_DOMAINS:
        raise ValueError(f"domain name {domain.name!r} is taken by a built-in gym")
    _REGISTERED[domain.name] = domain


def registered_modules() -> dict[str, str]:
    """Modules defining the registered (non built-in) gyms, so worker processes can import them."""
    return {name: d.generate.__module__ for name, d in _REGISTERED.items()}


def available_domains() -> list[str]:
    """Return the names of the built-in gyms present in this installation."""
    return [name for name in BUILTIN_DOMAINS if importlib.util.find_spec(f"arena.gyms.{name}") is not None]


def get_domain(name: str) -> Domain:
    """Return the built-in domain called ``name``.

    Raises:
        KeyError: No built-in gym has that name; the message lists those that do.
    """
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name not in BUILTIN_DOMAINS or name not in available_domains():
        raise KeyError(f"unknown domain {name!r}; built-in domains: {', '.join(available_domains())}")
    return _builtin(name)


@cache
def _builtin(name: str) -> Domain:
    module = importlib.import_module(f"arena.gyms.{name}")
    domain: Domain = module.DOMAIN
    return domain
