"""Gold programs derived from the careful reference policy playing a task's declared intent.

A draft that leaves ``steps`` to the kit gets as gold program the calls the careful policy
(``PolicyParams.expert()``) makes on the task from its observation alone: it resolves each ref, runs the strong
prerequisites of each goal call, makes the goal calls and replies. So the gold program follows from what the task
declares and cannot drift from it. The reference policy lives in ``arena.agents`` and is imported when a gym first
derives a gold program (it imports only the runtime, so no cycle).
"""

from __future__ import annotations

from arena.core.domain import Domain
from arena.core.gym import Gym
from arena.core.pack import SCHEMA_VERSION, Manifest, Pack
from arena.core.task import GoldProgram, GoldStep, Task
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
