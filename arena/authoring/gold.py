"""Gold programs derived from the careful reference policy playing a task's declared intent.

A draft that leaves ``steps`` to the kit gets as gold program the calls the careful policy
(``PolicyParams.expert()``) makes on the task from its observation alone: it resolves each ref, runs the strong
prerequisites of each goal call (chains of them too: ``A -> B -> goal``), makes the goal calls and replies. So the
gold program follows from what the task declares and cannot drift from it. A policy-required step the careful
policy cannot make, because neither the goal call, the steps before it nor a ref's id gives an argument it needs,
refuses the gym at load (:func:`dropped_steps` names the step and the argument). The reference policy lives in
``arena.agents`` and is imported when a gym first derives a gold program (it imports only the runtime, so no cycle).
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from arena.core.domain import STRONG, Domain
from arena.core.gym import Gym
from arena.core.pack import SCHEMA_VERSION, Manifest, Pack
from arena.core.task import GoldProgram, GoldStep, Intent, Task
from arena.core.toolkit import iter_specs


def expert_gold(domain: Domain, state_db: bytes, clock_start: str, tasks: list[Task]) -> dict[str, GoldProgram]:
    """The careful policy's program and reply on each task, by task id (played at seed 0, without faults).

    Args:
        domain: The gym (its tools, policy and dependency graph).
        state_db: The serialized starting world.
        clock_start: The episode clock's start.
        tasks: The tasks, their gold programs still empty.
    """
    from arena.agents.reference import PolicyParams, ReferencePolicy

    pack = Pack(
        manifest=Manifest(domain=domain.name, schema_version=SCHEMA_VERSION, seed=0, clock_start=clock_start),
        state_db=state_db, policy=domain.policy, tools=list(iter_specs(domain.tools)), graph=domain.graph_data(),
        faults=[], tasks=tasks,
    )
    agent = ReferencePolicy(PolicyParams.expert())
    programs: dict[str, GoldProgram] = {}
    with Gym(pack, domain) as gym:
        for task in tasks:
            observation = gym.reset(task.id, seed=0)
            run = agent.run_episode(observation, gym.call_tool, seed=0)
            steps = [GoldStep(tool=s.tool, arguments=dict(s.arguments)) for s in gym.trace]
            programs[task.id] = GoldProgram(steps=steps, reply=run.reply)
    return programs


def strong_edges(domain: Domain) -> nx.DiGraph[str]:
    """The policy-required edges (STRONG) of a gym's dependency graph."""
    strong: nx.DiGraph[str] = nx.DiGraph()
    strong.add_edges_from((a, b) for a, b, weight in domain.dependencies if weight >= STRONG)
    return strong


def dropped_steps(steps: Sequence[GoldStep], intent: Intent, strong: nx.DiGraph[str], domain: Domain) -> str:
    """Why a derived gold program lacks a policy-required step before one of its goal calls ("" when it lacks none).

    Args:
        steps: The careful policy's program.
        intent: The task's intent (its goal calls and refs).
        strong: The gym's STRONG edges.
        domain: The gym (the required parameters of its tools).
    """
    tools = [s.tool for s in steps]
    goals = {c.tool for c in intent.calls}
    known = {f"{r.entity}_id" for r in intent.refs}
    for index, step in enumerate(steps):
        if step.tool not in goals or step.tool not in strong:
            continue
        known |= set(step.arguments)
        missing = sorted(nx.ancestors(strong, step.tool) - set(tools[:index]))
        if not missing:
            continue
        needs = {m: sorted(set(domain.tools[m].spec.parameters.get("required", [])) - known) for m in missing
                 if m in domain.tools}
        why = "; ".join(f"{m} needs {', '.join(map(repr, p))}" if p else f"{m} was skipped" for m, p in needs.items())
        chains = ", ".join(" -> ".join(nx.shortest_path(strong, m, step.tool)) for m in missing)
        return (f"the careful policy calls {step.tool} without the policy-required step(s) {', '.join(missing)} "
                f"({chains}): a required step takes its arguments from the goal call, the steps before it and the "
                f"ids of the task's refs (<entity>_id), and {why}: add the argument to the goal call or a ref, or "
                "write the draft's steps")
    return ""
