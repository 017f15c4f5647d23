"""BFCL's multi-turn test entries, read from the installed ``bfcl_eval`` package (the ``bfcl`` extra).

Each entry of BFCL v4 multi-turn is a conversation of given user turns over a set of function classes (the
world), with the initial configuration of each class, and, in ``possible_answer/``, the ground-truth calls of
every turn. ``miss_func`` entries hold functions back until a turn (``missed_function``), whose user message is
then BFCL's fixed "more functions" prompt; ``miss_param`` entries leave a parameter out of a turn and give it in
the next; ``long_context`` entries run the same classes with their long-context data added.
"""

from __future__ import annotations

import ast
import importlib.resources
import importlib.util
import json
from functools import cache
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

PACKAGE = "bfcl_eval"
"""The distribution that ships BFCL's data (PyPI ``bfcl-eval``)."""

VERSION = "2026.3.23"
"""The release of ``bfcl-eval`` the gym reads (its data and long-context constants)."""

INSTALL_HINT = (f"install BFCL's package without its dependencies: pip install 'gymloop[bfcl]' && "
                f"pip install --no-deps bfcl-eval=={VERSION}")
"""What to run when the package is missing (its declared dependencies are heavy and unused here)."""

Category = Literal["base", "miss_func", "miss_param", "long_context"]
CATEGORIES: tuple[Category, ...] = get_args(Category)
"""BFCL v4's multi-turn categories, in BFCL's order."""

CLASS_NAMES: tuple[str, ...] = ("GorillaFileSystem", "MathAPI", "MessageAPI", "TwitterAPI", "TicketAPI",
                                "TradingBot", "TravelAPI", "VehicleControlAPI")
"""The function classes BFCL's multi-turn categories run."""

MORE_FUNCTIONS_PROMPT = "I have updated some more functions you can choose from. What about now?"
"""The user message BFCL sends at a ``miss_func`` turn, when the held-back functions become available."""


class BfclMissing(RuntimeError):
    """``bfcl_eval`` is not installed; the message says how to install it."""


class BfclEntry(BaseModel):
    """One BFCL multi-turn test entry with its ground truth.

    Attributes:
        id: BFCL's id (``multi_turn_base_0``).
        category: The category.
        index: The entry's number within its category (entries of one number share their conversation).
        turns: The user's message of each turn (a ``miss_func`` turn that adds functions has BFCL's fixed prompt).
        initial_config: Each class's initial configuration.
        involved_classes: The classes whose functions the entry offers.
        missed_function: Turn index to the functions first offered at that turn (``miss_func`` only).
        gold: The ground-truth calls of each turn, as BFCL writes them (``cd(folder='document')``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    category: Category
    index: int
    turns: list[str]
    initial_config: dict[str, Any]
    involved_classes: list[str]
    missed_function: dict[int, list[str]] = Field(default_factory=dict)
    gold: list[list[str]]


def installed() -> bool:
    """Whether ``bfcl_eval`` can be imported."""
    return importlib.util.find_spec(PACKAGE) is not None


def _data_text(*parts: str) -> str:
    if not installed():
        raise BfclMissing(f"the BFCL gym needs the package {PACKAGE} ({INSTALL_HINT})")
    return importlib.resources.files(PACKAGE).joinpath("data", *parts).read_text(encoding="utf-8")


def _lines(*parts: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _data_text(*parts).splitlines() if line.strip()]


@cache
def load_entries(category: Category) -> tuple[BfclEntry, ...]:
    """BFCL's entries of one multi-turn category, with their ground truth, in BFCL's order.

    Raises:
        BfclMissing: The package is not installed.
        ValueError: A question and its answer do not line up (names the entry).
    """
    name = f"BFCL_v4_multi_turn_{category}.json"
    questions = _lines(name)
    answers = {a["id"]: a["ground_truth"] for a in _lines("possible_answer", name)}
    entries = []
    for q in questions:
        gold = answers.get(q["id"])
        if gold is None or len(gold) != len(q["question"]):
            raise ValueError(f"BFCL entry {q['id']}: its ground truth does not cover its {len(q['question'])} turns")
        missed = {int(turn): list(names) for turn, names in q.get("missed_function", {}).items()}
        turns = [msgs[0]["content"] if msgs else MORE_FUNCTIONS_PROMPT for msgs in q["question"]]
        entries.append(BfclEntry(
            id=q["id"], category=category, index=int(q["id"].rsplit("_", 1)[1]), turns=turns,
            initial_config=q["initial_config"], involved_classes=list(q["involved_classes"]),
            missed_function=missed, gold=gold,
        ))
    return tuple(entries)


@cache
def function_docs() -> dict[str, dict[str, Any]]:
    """BFCL's documentation of every function of the multi-turn classes, by function name."""
    docs: dict[str, dict[str, Any]] = {}
    for file in ("gorilla_file_system", "math_api", "message_api", "posting_api", "ticket_api", "trading_bot",
                 "travel_booking", "vehicle_control"):
        for doc in _lines("multi_turn_func_doc", f"{file}.json"):
            docs[doc["name"]] = doc
    return docs


@cache
def long_context_data() -> dict[str, Any]:
    """The constants BFCL adds to its classes' data in the long-context category (read, not imported).

    BFCL ships them as a module of literals; the literal ``...`` closing its watch-list extension is kept as the
    string ``"..."``.
    """
    source = importlib.resources.files(PACKAGE).joinpath(
        "eval_checker", "multi_turn_eval", "func_source_code", "long_context.py").read_text(encoding="utf-8")
    values: dict[str, Any] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = _plain(ast.literal_eval(node.value))
    return values


def _plain(value: Any) -> Any:
    if value is Ellipsis:
        return "..."
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
