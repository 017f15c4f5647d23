"""What a round needs of a task beyond its gold program: the careful reference policy can play it.

A round trains a model to do what the careful policy (``PolicyParams.expert()``) does, from what the task declares
(its intent, the tools, the dependency graph). Three checks read one careful play of each task:

- ``careful_passes``: the careful policy passes the task (else its intent does not carry what its checks need);
- ``lookup_fields``: every field a text reference singles its record out by (``ref(..., city=...)``) is a field of
  the summaries its search returns (else the hint can never match, and picking the record is a guess);
- ``required_steps``: the gold program makes every policy-required step (a STRONG edge of the dependency graph,
  chains of them in a row too) the careful policy makes before a goal call both make (else the gold program
  teaches skipping it).

Each failure names the template, the task, the reference, tool or field, and what to change.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import networkx as nx

from arena.checks.results import CheckResult
from arena.core.domain import STRONG
from arena.core.gym import Gym
from arena.core.results import TraceStep, Verdict
from arena.core.task import EntityRef, Task
from arena.core.toolkit import ToolSpec

if TYPE_CHECKING:
    from arena.agents.base import AgentRun
    from arena.agents.reference import ReferencePolicy
    from arena.core.conversation import Conversation
    from arena.core.gym import Observation


def template_of(task_id: str) -> str:
    """The template a kit task comes from: its id without the ``-NN`` suffix."""
    stem, _, number = task_id.rpartition("-")
    return stem if stem and number.isdigit() else task_id


def strong_graph(graph: dict[str, Any]) -> nx.DiGraph[str]:
    """The STRONG edges of a pack's dependency graph (node-link data): what the policy requires first."""
    full: nx.DiGraph[str] = nx.DiGraph(nx.node_link_graph(graph, directed=True, edges="edges"))
    strong: nx.DiGraph[str] = nx.DiGraph()
    strong.add_nodes_from(full.nodes)
    strong.add_edges_from((a, b) for a, b, w in full.edges(data="weight", default=1) if w >= STRONG)
    return strong


def careful_play(gym: Gym, task: Task) -> tuple[list[TraceStep], Verdict | None, str]:
    """The careful policy's trace, verdict (``None`` when it crashed) and reply on ``task`` (seed 0)."""
    from arena.agents.reference import PolicyParams, ReferencePolicy

    agent = ReferencePolicy(PolicyParams.expert())
    observation = gym.reset(task.id, seed=0)
    try:
        if task.conversation is not None and task.conversation.user.kind == "given":
            run = _converse(agent, gym, task.conversation, observation)
        else:
            run = agent.run_episode(observation, gym.call_tool, seed=0)
    except Exception as exc:  # a crash of the policy on this task is reported as the check's failure
        return list(gym.trace), None, f"{type(exc).__name__}: {exc}"
    return list(gym.trace), gym.verify(run.reply), run.reply


def _converse(agent: ReferencePolicy, gym: Gym, conversation: Conversation, observation: Observation) -> AgentRun:
    """Play a conversation of given user turns as the episode loop does: each turn said, the agent answering."""
    from arena.agents.user import ConversationConfig
    from arena.rollout.conversation import Dialogue, conversational_view, converse, make_user

    config = ConversationConfig()
    dialogue = Dialogue(gym, make_user(conversation, config, 0), config)
    opening = dialogue.open()
    return converse(agent, conversational_view(observation, opening, dialogue), gym.call_tool, dialogue, seed=0)


def careful_checks(gym: Gym, task: Task, strong: nx.DiGraph[str]) -> list[CheckResult]:
    """The careful policy's checks of one task (see the module docstring)."""
    trace, verdict, reply = careful_play(gym, task)
    where = f"template {template_of(task.id)}"
    results = [_passes(task, verdict, reply, where)]
    results += [_lookup(task, ref, trace, gym.pack.tools, where) for ref in task.intent.refs
                if ref.mention_kind == "text" and ref.hint]
    results.append(_required(task, trace, strong, where))
    return results


def _passes(task: Task, verdict: Verdict | None, reply: str, where: str) -> CheckResult:
    if verdict is None:
        detail = f"{where}: the careful policy crashed: {reply}"
    else:
        failed = [f"{r.description}: {r.detail}" for r in verdict.results if not r.passed]
        detail = (f"{where}: the careful policy fails {'; '.join(failed)}. It plays the intent alone: declare in the "
                  "intent what the checks need (refs, goal calls with every argument, FormattedValue for a value "
                  "written in another format, the report); `python -m arena.checks.expert_check DOMAIN --task "
                  f"{task.id} --trace` shows its calls")
    return CheckResult(task_id=task.id, check="careful_passes", passed=verdict is not None and verdict.passed,
                       detail="" if verdict is not None and verdict.passed else detail)


def _summaries(output: Any) -> list[dict[str, Any]]:
    if isinstance(output, dict):
        output = next((v for v in output.values() if isinstance(v, list)), [])
    return [r for r in output if isinstance(r, dict)] if isinstance(output, list) else []


def _lookup(task: Task, ref: EntityRef, trace: list[TraceStep], tools: Iterable[ToolSpec],
            where: str) -> CheckResult:
    def result(detail: str) -> CheckResult:
        return CheckResult(task_id=task.id, check="lookup_fields", passed=not detail, detail=detail)

    hinted = ", ".join(f"{k}=" for k in ref.hint)
    search = next((t.name for t in tools if t.entity == ref.entity and t.operation == "search"), None)
    if search is None:
        return result(f"{where}: ref {ref.name!r} finds a {ref.entity} by text ({ref.mention!r}) but no tool searches "
                      f"{ref.entity} records (@tool(entity={ref.entity!r}, operation='search')): add one, or refer to "
                      "the record by its id")
    shown: set[str] = set()
    searched = False
    for step in trace:
        if step.tool == search and ref.mention in step.arguments.values():
            searched = True
            for summary in _summaries(step.output):
                shown |= set(summary)
    if not searched:
        return result(f"{where}: ref {ref.name!r} ({hinted}): the careful policy never searched {search} for "
                      f"{ref.mention!r}, so its hint fields could not be checked (see careful_passes)")
    missing = [k for k in ref.hint if k not in shown]
    if not shown:
        return result(f"{where}: ref {ref.name!r}: {search} finds no {ref.entity} for {ref.mention!r}: mention the "
                      "record by words its search matches")
    if missing:
        return result(f"{where}: ref {ref.name!r} singles its {ref.entity} out by {', '.join(map(repr, missing))}, "
                      f"but the summaries {search} returns have no such field (they show {', '.join(sorted(shown))}): "
                      "hint a field they show, or add it to the search summaries")
    return result("")


def _required(task: Task, trace: list[TraceStep], strong: nx.DiGraph[str], where: str) -> CheckResult:
    gold = [s.tool for s in task.gold.steps]
    played = [s.tool for s in trace if s.ok]
    dropped: list[str] = []
    for goal in dict.fromkeys(c.tool for c in task.intent.calls):
        if goal not in gold or goal not in played or goal not in strong:
            continue
        before_gold, before_play = set(gold[: gold.index(goal)]), set(played[: played.index(goal)])
        for step in sorted(nx.ancestors(strong, goal) & (before_play - before_gold)):
            chain = " -> ".join(nx.shortest_path(strong, step, goal))
            dropped.append(f"{step} before {goal} ({chain})")
    detail = (f"{where}: the gold program skips policy-required step(s) the careful policy makes: {'; '.join(dropped)}."
              " Add them to the draft's steps (or leave steps out: the kit then derives the careful policy's program)"
              if dropped else "")
    return CheckResult(task_id=task.id, check="required_steps", passed=not dropped, detail=detail)
