"""A starter gym to edit: the rental desk that docs/writing-a-gym.md builds, written out under a new name.

The files are ``arena/authoring/starter/`` (a complete kit gym, kept equal to the page's code blocks by
tests/authoring/test_writing_a_gym_doc.py); :func:`write_starter` copies them into ``<folder>/<name>/`` with the
gym renamed, and :func:`register_in_settings` names the package in gymloop.toml's ``gym_modules``.
"""

from __future__ import annotations

import keyword
import re
import sys
import tomllib
from pathlib import Path

from arena.core.domains import BUILTIN_DOMAINS, MODULES_SETTING

STARTER = Path(__file__).parent / "starter"
"""The starter gym's files (``world.py``, ``tools.py``, ``tasks.py``, ``policy.md``, ``__init__.py``)."""

STARTER_NAME = "rentaldesk"
"""The starter's own name, replaced by the new gym's in every file."""

STARTER_FILES = ("__init__.py", "world.py", "tools.py", "tasks.py", "policy.md")
"""The files a new gym gets, in the order they are written."""

_NAME = re.compile(r"^[a-z][a-z0-9_]{1,39}$")


def check_gym_name(name: str) -> None:
    """Refuse a name that cannot be both a gym name and a Python package of its own.

    Raises:
        ValueError: The name, and why it cannot be used.
    """
    if not _NAME.match(name) or keyword.iskeyword(name):
        raise ValueError(f"gym name {name!r} must be a Python package name: 2-40 lowercase letters, digits or _, "
                         "starting with a letter")
    if name in BUILTIN_DOMAINS:
        raise ValueError(f"gym name {name!r} is taken by a built-in gym")
    if name in sys.stdlib_module_names or name in {"arena", "flows", "diagnosis", "curriculum", "registry",
                                                   "trainers", "factory_client", "tests"}:
        raise ValueError(f"gym name {name!r} is the name of a module gymloop or Python already uses")


def write_starter(name: str, folder: Path) -> list[Path]:
    """Write the starter gym as package ``name`` in ``folder`` (``folder/name/``); return the files written.

    Raises:
        ValueError: The name cannot be used, or ``folder/name`` already exists (nothing is written).
    """
    check_gym_name(name)
    target = folder / name
    if target.exists():
        raise ValueError(f"{target} already exists; choose another name or folder")
    staging = folder / f".{name}.partial"
    staging.mkdir(parents=True)
    written = []
    for file in STARTER_FILES:
        text = (STARTER / file).read_text(encoding="utf-8").replace(STARTER_NAME, name)
        (staging / file).write_text(text, encoding="utf-8")
        written.append(target / file)
    staging.rename(target)  # all files or none
    return written


def register_in_settings(name: str, settings_file: Path) -> str:
    """Name module ``name`` in ``gym_modules`` of ``settings_file`` (created if missing); return what was done.

    An existing ``gym_modules`` line is never rewritten: the message then says what to add.

    Raises:
        ValueError: The settings file exists but is not valid TOML.
    """
    line = f'{MODULES_SETTING} = ["{name}"]'
    if not settings_file.exists():
        settings_file.write_text(line + "\n", encoding="utf-8")
        return f"wrote {settings_file} with {line}"
    text = settings_file.read_text(encoding="utf-8")
    try:
        current = tomllib.loads(text).get(MODULES_SETTING)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{settings_file} is not valid TOML: {exc}") from None
    if current is None:
        settings_file.write_text(line + "\n" + text, encoding="utf-8")  # top-level keys go before any [table]
        return f"added {line} to {settings_file}"
    if isinstance(current, list) and name in current:
        return f"{settings_file} already names {name!r} in {MODULES_SETTING}"
    return f"add {name!r} to {MODULES_SETTING} in {settings_file} so gymloop finds the gym"
