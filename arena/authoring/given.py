"""Gyms of given tasks: a benchmark's fixed suite, its world, its gold, its verdict, as a gymloop gym.

A benchmark written outside gymloop (BFCL, τ²-bench) ships its tasks: their requests, their splits, the calls that
solve them and how they are judged. Such a gym does not generate tasks from templates; the kit here does what is
the same for every one of them:

- :func:`fixed_suite_knobs` says which knobs of the shared vocabulary a fixed suite cannot honour, and why;
- :func:`play_gold` plays each task's gold program through the gym's own runtime (a real :class:`Gym` on the built
  world), turn by turn for a conversation of given user turns, and measures the world after each turn, so a gym
  computes its expectations from its own tools;
- :func:`intent_from_gold` derives the structured intent the reference policy plays from the gold calls: a value
  the requester said stays literal, a value the agent can only read from the world becomes a ``"$tool.field"``
  path into the output of the call that returned it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from arena.authoring.knobs import VOCABULARY
from arena.core.domain import Domain
from arena.core.gym import Gym
from arena.core.pack import SCHEMA_VERSION, Manifest, Pack
from arena.core.results import TraceStep
from arena.core.task import GoldStep, IntendedCall, Intent, Task
from arena.core.toolkit import iter_specs

M = TypeVar("M")


def fixed_suite_knobs(benchmark: str) -> dict[str, str]:
    """Why a gym of ``benchmark``'s given tasks cannot honour each knob of the shared vocabulary."""
    fixed = f"{benchmark}'s tasks, their splits and their worlds are given: a variant cannot add, drop or change them"
    return {
        knob: {
            "heldout_fraction": f"{benchmark}'s held-out suite is fixed so every round is judged on the same tasks",
            "fault_rate": f"{benchmark}'s verdict replays its own functions, which have no injected faults",
            "fault_kinds": f"{benchmark}'s verdict replays its own functions, which have no injected faults",
        }.get(knob, fixed)
        for knob in VOCABULARY
    }


@dataclass
class PlayedTurn:
    """One turn of a gold program played through the gym.

    Attributes:
        text: The user's message that opened the turn.
        steps: The turn's calls as the trace recorded them (outputs included).
        measured: What the gym's ``measure`` read of the world at the end of the turn.
    """

    text: str
    steps: list[TraceStep] = field(default_factory=list)
    measured: Any = None


def play_gold(domain: Domain, state_db: bytes, clock_start: str, tasks: Sequence[Task],
              measure: Callable[[Gym, Task], M]) -> dict[str, list[PlayedTurn]]:
    """Play every task's gold program through a gym on the built world, turn by turn, measuring after each turn.

    A task whose conversation has given user turns plays each turn's message, then the gold steps of that turn
    (``GoldStep.turn``); any other task plays its prompt then all its steps, as one turn.

    Args:
        domain: The gym being built (its tools).
        state_db: The built starting world.
        clock_start: The episode clock's start.
        tasks: The tasks, with their gold programs (their assertions are not used).
        measure: Reads what the gym needs of the world at the end of a turn (the gym is open on the task).

    Raises:
        ValueError: A gold call fails in the gym (names the task, the turn and the call): the gold program of a
            given task must run as the benchmark ran it.
    """
    pack = Pack(
        manifest=Manifest(domain=domain.name, schema_version=SCHEMA_VERSION, seed=0, clock_start=clock_start),
        state_db=state_db, policy=domain.policy, tools=list(iter_specs(domain.tools)), graph=domain.graph_data(),
        faults=[], tasks=list(tasks),
    )
    played: dict[str, list[PlayedTurn]] = {}
    with Gym(pack, domain) as gym:
        for task in tasks:
            gym.reset(task.id, seed=0)
            texts = _user_texts(task)
            turns: list[PlayedTurn] = []
            for k, text in enumerate(texts):
                gym.record_turn("user", text)
                turn = PlayedTurn(text=text)
                for step in task.gold.steps:
                    if (step.turn or 0) != k:
                        continue
                    result = gym.call_tool(step.tool, step.arguments)
                    if not result.ok:
                        message = result.error.message if result.error else ""
                        raise ValueError(f"task {task.id}: gold call {step.tool}({step.arguments}) of turn {k + 1} "
                                         f"failed in the gym: {message}")
                    turn.steps.append(gym.trace[-1])
                turn.measured = measure(gym, task)
                turns.append(turn)
            played[task.id] = turns
    return played


def _user_texts(task: Task) -> list[str]:
    conversation = task.conversation
    if conversation is not None and conversation.user.kind == "given":
        return [t.text for t in conversation.user.turns]
    return [task.prompt]


def intent_from_gold(goal: str, turns: Sequence[PlayedTurn]) -> Intent:
    """The intent the reference policy plays: the gold calls of each turn, with symbolic arguments.

    An argument stays literal when the requester said it (in this turn's message or an earlier one); a value only
    the world holds becomes a ``"$tool.path"`` into the latest output of the earlier call that returned it.

    Args:
        goal: The intent's goal name.
        turns: The gold program played turn by turn (:func:`play_gold`).
    """
    said = ""
    latest: dict[str, dict[tuple[type, Any], str]] = {}
    calls: list[IntendedCall] = []
    for k, turn in enumerate(turns):
        said += "\n" + turn.text
        for step in turn.steps:
            arguments = {name: _symbolic(value, latest, said) for name, value in step.arguments.items()}
            calls.append(IntendedCall(tool=step.tool, arguments=arguments, turn=k))
            latest.pop(step.tool, None)
            latest[step.tool] = _leaf_paths(step.output)
    return Intent(goal=goal, calls=calls)


def _symbolic(value: Any, latest: Mapping[str, dict[tuple[type, Any], str]], said: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int) or str(value) in said:
        return value
    for tool in reversed(list(latest)):
        path = latest[tool].get((type(value), value))
        if path is not None:
            return f"${tool}.{path}" if path else f"${tool}"
    return value


def _leaf_paths(output: Any) -> dict[tuple[type, Any], str]:
    """Each text or integer ``output`` holds, by (type, value), with the dotted path of its first occurrence."""
    paths: dict[tuple[type, Any], str] = {}

    def walk(value: Any, path: str, depth: int) -> None:
        if isinstance(value, str | int) and not isinstance(value, bool):
            paths.setdefault((type(value), value), path)
        elif depth < 6 and isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and "." not in key:
                    walk(item, f"{path}.{key}" if path else key, depth + 1)
        elif depth < 6 and isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}.{i}" if path else str(i), depth + 1)

    walk(output, "", 0)
    return paths


def gold_steps(turns: Sequence[Sequence[tuple[str, dict[str, Any]]]]) -> list[GoldStep]:
    """Gold steps of a conversation of given turns: each turn's ``(tool, arguments)`` calls, marked with the turn."""
    return [GoldStep(tool=tool, arguments=arguments, turn=k)
            for k, calls in enumerate(turns) for tool, arguments in calls]
