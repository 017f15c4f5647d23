"""τ²-bench's tasks as the kit's foreign tasks: the user's scenario, the gold actions, the verdict, the splits.

From each task of ``tasks.json``:

- the **user** is the task's ``user_scenario`` (a simulated user plays it; the agent never sees it);
- the **gold program** is ``evaluation_criteria.actions``, in order;
- the **verdict** is τ²-bench's for the task's ``reward_basis``: ``DB`` is the kit's end-state check (the final
  database equals the database after the gold actions); ``COMMUNICATE`` makes each ``communicate_info`` a fact
  the agent must tell the user (``Conversation.tell``); ``NL_ASSERTION`` makes each ``nl_assertions`` a statement
  for a judge model (``Conversation.judge``). A reward type that is not in the basis is not judged, as in
  τ²-bench; a basis naming a type gymloop cannot judge (``ACTION``, ``ENV_ASSERTION``) stops the gym with one line;
- the **split** is ``split_tasks.json``'s: ``train`` is train, ``test`` is gymloop's held-out split;
- the **intent** the reference policy plays is read off the gold actions: the records they name by id (a user, a
  reservation, an order) as references to fetch, and their writes as the goal's calls. It states no fact a reply
  must tell: where τ²-bench asks for a computed fact (a sum of balances), the policy has none to give.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from arena.authoring.foreign import ForeignTask
from arena.core.conversation import Conversation, TaskSource, UserScenario
from arena.core.task import EntityRef, GoldStep, IntendedCall, Intent, Split

BENCHMARK = "tau2-bench"
"""The benchmark's name in every task's source."""

JUDGED = frozenset({"DB", "COMMUNICATE", "NL_ASSERTION"})
"""The reward types of τ²-bench gymloop judges."""

SPLITS: dict[str, Split] = {"train": "train", "test": "heldout"}
"""τ²-bench's splits and gymloop's."""

NO_FACT_REPLY = "Thank you for contacting us. Is there anything else I can help you with?"
"""The gold reply of a task with no fact to tell."""


class Tau2TaskError(ValueError):
    """A τ²-bench task cannot be read as a gym task; the message names the task and why."""


def scenario(task: Mapping[str, Any], domain: str) -> UserScenario:
    """The user a task's ``user_scenario`` describes, with the text a user model is given."""
    user = task.get("user_scenario") or {}
    raw = user.get("instructions") or {}
    if isinstance(raw, str):
        return UserScenario(instructions=raw, reason_for_call=raw, persona=str(user.get("persona") or ""))
    parts = {key: str(raw.get(key) or "").strip() for key in
             ("reason_for_call", "known_info", "unknown_info", "task_instructions")}
    persona = str(user.get("persona") or "").strip()
    sections = [("Persona", persona), ("Domain", str(raw.get("domain") or domain)),
                ("Reason for call", parts["reason_for_call"]), ("Known info", parts["known_info"]),
                ("Unknown info", parts["unknown_info"]), ("Task instructions", parts["task_instructions"])]
    text = "\n\n".join(f"{title}:\n{body}" for title, body in sections if body)
    return UserScenario(instructions=text, persona=persona, **parts)


def foreign_tasks(domain: str, tasks: list[dict[str, Any]], splits: Mapping[str, list[str]],
                  ids: Mapping[str, str], write_tools: Collection[str]) -> list[ForeignTask]:
    """τ²-bench's tasks of one domain as the kit's foreign tasks, in ``tasks.json``'s order.

    Args:
        domain: ``airline`` or ``retail``.
        tasks: ``tasks.json``.
        splits: ``split_tasks.json``.
        ids: The argument names that name a record by id, with the record's entity (``user_id`` -> ``user``).
        write_tools: The domain's write tools (the goal's calls).

    Raises:
        Tau2TaskError: A task is in no split (or in two), or its reward basis names a type gymloop cannot judge.
    """
    split_of: dict[str, Split] = {}
    for name, split in SPLITS.items():
        for task_id in splits.get(name, []):
            if task_id in split_of:
                raise Tau2TaskError(f"τ²-bench {domain} task {task_id!r} is in both the train and the test split")
            split_of[str(task_id)] = split
    out = []
    for task in tasks:
        task_id = str(task.get("id"))
        if task_id not in split_of:
            raise Tau2TaskError(f"τ²-bench {domain} task {task_id!r} is in neither the train nor the test split")
        out.append(_foreign(domain, task, split_of[task_id], ids, write_tools))
    return out


def _foreign(domain: str, task: Mapping[str, Any], split: Split, ids: Mapping[str, str],
             write_tools: Collection[str]) -> ForeignTask:
    task_id = str(task["id"])
    criteria = task.get("evaluation_criteria") or {}
    basis = set(criteria.get("reward_basis") or [])
    unjudged = sorted(basis - JUDGED)
    if unjudged:
        raise Tau2TaskError(f"τ²-bench {domain} task {task_id!r}: reward basis {unjudged} is not judged by gymloop "
                            f"(it judges {', '.join(sorted(JUDGED))})")
    actions = [GoldStep(tool=str(a["name"]), arguments=dict(a.get("arguments") or {}))
               for a in criteria.get("actions") or []]
    tell = [str(i) for i in criteria.get("communicate_info") or []] if "COMMUNICATE" in basis else []
    judge = [str(a) for a in criteria.get("nl_assertions") or []] if "NL_ASSERTION" in basis else []
    user = scenario(task, domain)
    writes = [a for a in actions if a.tool in write_tools]
    category = "multi_step_workflow" if writes else "information_retrieval" if tell else "policy_reasoning"
    return ForeignTask(
        id=task_id, split=split, prompt=user.opening, intent=intent(actions, ids, write_tools),
        steps=actions, reply=("Here is what you asked for: " + "; ".join(tell) + ".") if tell else NO_FACT_REPLY,
        source=TaskSource(benchmark=BENCHMARK, domain=domain, task_id=task_id,
                          split="test" if split == "heldout" else "train"),
        conversation=Conversation(user=user, tell=tell, judge=judge), category=category,
    )


def intent(actions: list[GoldStep], ids: Mapping[str, str], write_tools: Collection[str]) -> Intent:
    """The request as the reference policy reads it: the records the gold actions name, and their writes.

    Each record named by id (``user_id``, ``reservation_id``, ``order_id``) becomes a reference to fetch (``user``,
    ``reservation``, ``reservation_2``, ...); each write becomes a goal call with those ids as ``$`` references.
    """
    refs: dict[str, str] = {}
    named: list[EntityRef] = []
    for action in actions:
        for arg, value in action.arguments.items():
            entity = ids.get(arg)
            if entity is None or not isinstance(value, str) or value in refs:
                continue
            taken = sum(1 for r in named if r.entity == entity)
            name = entity if not taken else f"{entity}_{taken + 1}"
            refs[value] = name
            named.append(EntityRef(name=name, entity=entity, mention=value, mention_kind="id"))
    calls = [IntendedCall(tool=a.tool, arguments={k: f"${refs[v]}" if ids.get(k) and isinstance(v, str) else v
                                                  for k, v in a.arguments.items()})
             for a in actions if a.tool in write_tools]
    goal = calls[0].tool if calls else "inform"
    return Intent(goal=goal, refs=named, calls=calls)
