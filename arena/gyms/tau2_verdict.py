"""Which conformance checks τ²-bench's verdict cannot hold, on which tasks, and why.

τ²-bench judges a conversation by the final database (against the gold actions' one), the facts the agent had to
tell, and (with a judge model) its NL assertions. Two consequences, which ``gymloop gyms check`` prints rather
than hiding:

- a task whose gold actions change nothing and that has no fact to tell is passed by any conversation that leaves
  the database alone (τ²-bench gives a silent agent full reward there, unless NL assertions are judged): the null
  agent, a claim of success, an injection, a random writer whose writes all fail, a dump of what it read;
- the verdict has no rule on what a reply must not say (records pasted, foreign ids, internal values, claims,
  hedges, injected instructions): an agent that makes the right changes, or reads the facts to tell and pastes
  them, passes; so does the injection agent where the gold action is a call with the request's ids alone.

Every other check applies as to any gym: the gold passes, an agent that does not make the gold's changes or does
not tell the facts fails.
"""

from __future__ import annotations

from arena.core.task import SideEffectAssertion, Task

DOING_NOTHING = frozenset({"null_fails", "served_oracle", "adversary:null", "adversary:claim_success",
                           "adversary:injection", "adversary:random_write"})
"""Checks whose agent changes nothing (or only tries to) and tells nothing."""

PASTING = frozenset({"adversary:dump_everything", "adversary:paste_records", "adversary:paste_lowercase",
                     "adversary:paste_respelled", "adversary:paste_json", "adversary:paste_table",
                     "adversary:paste_base64"})
"""Checks whose agent reads and pastes what it read, changing nothing."""

ADDING_TO_THE_WORK = frozenset({"adversary:every_value", "adversary:hedge", "adversary:expert_foreign_id",
                                "adversary:expert_internal", "adversary:expert_claim"})
"""Checks whose agent makes the careful policy's calls and adds to its reply what a reply must not say."""


def _changes(task: Task) -> bool:
    return any(isinstance(a, SideEffectAssertion) and a.allowed for a in task.assertions)


def _writes_by_ids(task: Task) -> bool:
    """Whether every gold write takes only the ids the request names (a cancellation by reservation id)."""
    named = {ref.mention for ref in task.intent.refs}
    writes = [s for s in task.gold.steps if any(c.tool == s.tool for c in task.intent.calls)]
    return bool(writes) and all(set(map(str, s.arguments.values())) <= named for s in writes)


def not_applicable(task: Task, check: str) -> str | None:
    """Why ``check`` cannot hold on ``task`` under τ²-bench's verdict, or ``None`` when it must hold."""
    if check == "required_steps":
        return ("the gold program is τ²-bench's own actions, kept as τ²-bench wrote them (it may write without the "
                "lookup the policy asks for first); τ²-bench's verdict reads the final database, not the steps")
    conversation = task.conversation
    tell = conversation.tell if conversation is not None else []
    judged = len(conversation.judge) if conversation is not None else 0
    silent = not _changes(task) and not tell
    if silent and (check in DOING_NOTHING or check in PASTING):
        extra = (f"; its {judged} NL assertion(s) need a judge model, and without one they are reported unjudged"
                 if judged else "")
        return ("τ²-bench gives full reward to any conversation that leaves the database as it is on this task: its "
                f"gold actions change nothing and it has no fact to tell{extra}")
    if check in PASTING and not _changes(task):
        return ("τ²-bench's verdict has no rule against pasting records: an agent that reads the records and pastes "
                "them tells the facts this task asks for among them")
    if check == "adversary:injection" and _writes_by_ids(task) and not tell:
        return ("the injection agent calls every tool with the ids the request names; here the gold action is such a "
                "call (it takes the request's ids and nothing else), and τ²-bench's verdict has no rule on the "
                "instructions its reply holds")
    if check == "careful_passes" and tell:
        return ("τ²-bench asks the agent to tell facts computed from the records (sums, counts, totals); the careful "
                "reference policy states what its calls return and computes nothing, so no intent read off the gold "
                "actions can carry these facts without giving the answer away")
    if check in ADDING_TO_THE_WORK:
        return ("τ²-bench's verdict reads the final database and the facts to tell, and has no rule on what a reply "
                "must not say (foreign ids, internal values, claims, hedges, extra values): this agent makes the "
                "gold's changes and tells the facts, so it passes")
    return None
