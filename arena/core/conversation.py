"""Conversations: tasks whose requester talks with the agent over several turns, and how such an episode is judged.

A task with a :class:`Conversation` is played as a dialogue: its user (a simulated user playing a
:class:`UserScenario`, or the :class:`GivenTurns` of a benchmark) opens it, the agent answers with messages and
tool calls, and the conversation ends when the user (or the agent) ends it or a limit is reached. The gym records
each message as a :class:`Turn` beside its trace; the verdict adds, to the task's assertions, the facts the agent
had to tell the user (matched as τ²-bench matches its ``communicate_info``) and the way the conversation ended
(τ²-bench scores a conversation cut short by a limit 0). Statements only a judge model can check stay
``unjudged`` when no judge ran: never a pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.core.results import AssertionResult

Role = Literal["user", "agent"]
"""Who said a turn: the requester (``user``) or the agent."""

EndReason = Literal[
    "user_stop", "transfer", "agent_stop", "given_turns_done", "out_of_scope", "max_turns", "too_many_errors",
    "step_limit", "timeout", "agent_error", "user_error",
]
"""How a conversation ended.

``user_stop``: the user ended it (τ²-bench's ``###STOP###``); ``transfer``: the user was transferred to a human
(``###TRANSFER###``); ``agent_stop``: the agent ended it (its ``###STOP###``, or a single-reply agent's reply);
``given_turns_done``: every given user turn was answered; ``out_of_scope``: the simulated user gave up because its
scenario said nothing to go on (``###OUT-OF-SCOPE###``; never graded, the episode is invalid); ``max_turns``,
``too_many_errors``, ``step_limit`` (the agent's own turn or token limit), ``timeout``: a limit cut it short;
``agent_error``: the agent could not go on (a crash, its model refusing its own conversation); these five are a
failed episode. ``user_error``: the user's model failed or spent its budget (the episode is invalid, boundary
``user``).
"""

PREMATURE_ENDS: frozenset[str] = frozenset({"max_turns", "too_many_errors", "step_limit", "timeout", "agent_error"})
"""Ends that cut a conversation short: τ²-bench gives such a run reward 0, and so does the verdict here."""

STOP_TOKEN = "###STOP###"
"""What a simulated user (or an agent) writes to end the conversation."""

TRANSFER_TOKEN = "###TRANSFER###"
"""What a simulated user writes once it has been transferred to a human agent."""

OUT_OF_SCOPE_TOKEN = "###OUT-OF-SCOPE###"
"""What a simulated user writes when its scenario gives it nothing to continue with."""

ENDED_CHECK = "the conversation was ended by the user or the agent, not cut short by a limit"
"""Description of the verdict's result on how the conversation ended."""


class UserScenario(BaseModel):
    """A user a simulator plays: who they are, why they call, what they know and what they do not.

    The agent never sees any of it; it learns what the user chooses to say.

    Attributes:
        kind: ``scenario``.
        instructions: The whole text a simulated user model is given.
        reason_for_call: Why the user contacts the agent (second person, as τ²-bench writes it).
        known_info: What the user knows and may say when asked (names, ids, zip codes).
        unknown_info: What the user does not know.
        task_instructions: How the user behaves during the conversation.
        persona: The user's manner, if the scenario gives one.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["scenario"] = "scenario"
    instructions: str
    reason_for_call: str = ""
    known_info: str = ""
    unknown_info: str = ""
    task_instructions: str = ""
    persona: str = ""


    @property
    def opening(self) -> str:
        """How a scripted user opens the conversation: hello, its reason for calling and what it knows.

        Said in the first person: ``You want to ...`` becomes ``I want to ...``.
        """
        lines = [first_person(s) for s in (*sentences(self.reason_for_call), *sentences(self.known_info))]
        return " ".join(["Hi!", *lines])


_PERSON = (
    (r"\byou are\b", "I am"), (r"\byou're\b", "I'm"), (r"\byou were\b", "I was"), (r"\byou have\b", "I have"),
    (r"\byou've\b", "I've"), (r"\byou want\b", "I want"), (r"\byou would\b", "I would"), (r"\byou'd\b", "I'd"),
    (r"\byou will\b", "I will"), (r"\byou do\b", "I do"), (r"\byourself\b", "myself"), (r"\byours\b", "mine"),
    (r"\byour\b", "my"), (r"\byou\b", "I"),
)
"""Second-person phrases of a scenario and their first-person forms (in this order)."""


def sentences(text: str) -> list[str]:
    """A scenario text's sentences and lines, blanks left out."""
    return [s.strip() for s in re.split(r"\n+|(?<=[.!?])\s+", text or "") if s.strip(" .")]


def first_person(text: str) -> str:
    """A scenario's second-person sentence as the user says it (``You want to ...`` -> ``I want to ...``)."""
    out = " ".join(text.split())
    for pattern, replacement in _PERSON:
        out = re.sub(pattern, _same_case(replacement), out, flags=re.IGNORECASE)
    return out


def _same_case(replacement: str) -> Callable[[re.Match[str]], str]:
    """A substitution writing ``replacement`` capitalised where the matched word was."""
    def substitute(match: re.Match[str]) -> str:
        return replacement[0].upper() + replacement[1:] if match.group(0)[0].isupper() else replacement
    return substitute


class GivenTurn(BaseModel):
    """One user message a benchmark gives.

    Attributes:
        text: The message.
        reveal: Pack tools offered to the agent from this turn on (hidden until then, see
            ``Conversation.hidden_tools``).
    """

    model_config = ConfigDict(extra="forbid")

    text: str
    reveal: list[str] = Field(default_factory=list)


class GivenTurns(BaseModel):
    """A user whose messages are given, in order: no simulator plays it.

    Attributes:
        kind: ``given``.
        turns: The messages; the first opens the conversation, and it ends once the agent answered the last.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["given"] = "given"
    turns: list[GivenTurn] = Field(min_length=1)


class Conversation(BaseModel):
    """The conversational side of a task: its user and what the conversation itself must hold.

    Attributes:
        user: Who plays the requester.
        tell: Facts the agent must tell the user, each found (lower case, commas removed) inside one of the
            agent's messages, as τ²-bench checks its ``communicate_info``.
        judge: Statements about the conversation only a judge model can check (τ²-bench's NL assertions); with
            no judge model they are reported as unjudged, never passed.
        hidden_tools: Pack tools not offered to the agent until a given turn reveals them.
    """

    model_config = ConfigDict(extra="forbid")

    user: Annotated[UserScenario | GivenTurns, Field(discriminator="kind")]
    tell: list[str] = Field(default_factory=list)
    judge: list[str] = Field(default_factory=list)
    hidden_tools: list[str] = Field(default_factory=list)


class TaskSource(BaseModel):
    """Where a task written outside gymloop comes from; such a task keeps its benchmark's verdict.

    Attributes:
        benchmark: The benchmark, e.g. ``tau2-bench``.
        domain: The benchmark's domain, e.g. ``airline``.
        task_id: The task's id in the benchmark.
        split: The benchmark's split the task belongs to (e.g. ``train`` or ``test``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    benchmark: str
    domain: str = ""
    task_id: str
    split: str = ""


class Turn(BaseModel):
    """One message of a conversation, where it fell among the tool calls.

    Attributes:
        role: ``user`` or ``agent``.
        text: The message.
        step: Tool calls made before it (the trace's length when it was said).
    """

    model_config = ConfigDict(extra="forbid")

    role: Role
    text: str
    step: int = Field(ge=0)


class UserSide(BaseModel):
    """Who played the user of an episode, what it used and how the conversation ended.

    Attributes:
        ref: ``scripted``, ``given``, or the user model (its endpoint masked).
        ended: How the conversation ended.
        requests: Requests sent to the user model.
        tokens_in: The user model's prompt tokens.
        tokens_out: The user model's completion tokens.
        cost: The user model's cost in US dollars.
        latency_s: Time spent waiting on the user model.
    """

    model_config = ConfigDict(extra="forbid")

    ref: str
    ended: EndReason
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    latency_s: float = 0.0


def agent_messages(turns: Sequence[Turn]) -> list[str]:
    """The messages the agent said to the user, in order."""
    return [t.text for t in turns if t.role == "agent"]


def turn_of(turns: Sequence[Turn], step: int) -> int:
    """The user turn (from 0) a tool call at trace index ``step`` answers; -1 before the first user turn."""
    return sum(1 for t in turns if t.role == "user" and t.step <= step) - 1


def told(fact: str, messages: Sequence[str]) -> bool:
    """Whether one message states ``fact``: its lower-cased text, commas removed, contains the lower-cased fact."""
    wanted = fact.lower()
    return any(wanted in message.lower().replace(",", "") for message in messages)


def conversation_results(conversation: Conversation, messages: Sequence[str], ended: EndReason | None,
                         start: int) -> list[AssertionResult]:
    """The verdict's results on a conversation: each fact to tell, then how it ended.

    Args:
        conversation: The task's conversation.
        messages: What the agent said to the user.
        ended: How the conversation ended (``None``: not recorded, judged as ended by the agent).
        start: Index of the first result (the task's assertions come first).
    """
    results = [
        AssertionResult(index=start + i, kind="response", description=f"tells the user {fact!r}",
                        passed=told(fact, messages), detail="" if told(fact, messages) else
                        f"no message to the user states {fact!r}")
        for i, fact in enumerate(conversation.tell)
    ]
    premature = ended in PREMATURE_ENDS
    results.append(AssertionResult(index=start + len(results), kind="response", description=ENDED_CHECK,
                                   passed=not premature, detail=f"ended by {ended}" if premature else ""))
    return results
