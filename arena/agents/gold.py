"""The gold agent: plays each task's gold program, the gym's own solution, through the real tools.

Its episodes are demonstrations: the tool calls a careful agent makes, with the results the world really returns,
verified like any other episode. The ``trl`` trainer's ``demonstrations`` option trains a local checkpoint on them
for the tasks none of its own rollouts solved.
"""

from __future__ import annotations

from arena.agents.base import AgentRun, CallTool, UserChannel
from arena.core.gym import Observation
from arena.core.pack import Pack


class GoldAgent:
    """Plays the gold program of each task of one pack, then gives the gold reply.

    Args:
        pack: The pack whose tasks it plays (tasks are found by their id).
    """

    name = "gold"

    def __init__(self, pack: Pack) -> None:
        self.pack_id = pack.id
        self._gold = {task.id: task.gold for task in pack.tasks}

    @property
    def model_ref(self) -> str:
        """``gold@<pack id>``: the pack's gold programs."""
        return f"gold@{self.pack_id}"

    def run_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
        """Call every gold step's tool with its arguments, then reply with the gold reply.

        Raises:
            KeyError: The task is not one of the pack's.
        """
        task_id = str(observation.task.get("task_id"))
        gold = self._gold.get(task_id)
        if gold is None:
            raise KeyError(f"task {task_id!r} is not in pack {self.pack_id}")
        for step in gold.steps:
            call_tool(step.tool, dict(step.arguments))
        return AgentRun(reply=gold.reply, turns=len(gold.steps) + 1, stop_reason="reply")

    def run_conversation(self, observation: Observation, call_tool: CallTool, user: UserChannel, *,
                         seed: int) -> AgentRun:
        """Converse: after each user message, the gold steps of that turn (``GoldStep.turn``), then the gold reply.

        A gold program whose steps name no turn is played whole in the first turn, and its reply ends the agent's
        part.

        Raises:
            KeyError: The task is not one of the pack's.
        """
        task_id = str(observation.task.get("task_id"))
        gold = self._gold.get(task_id)
        if gold is None:
            raise KeyError(f"task {task_id!r} is not in pack {self.pack_id}")
        if all(step.turn is None for step in gold.steps):
            return self.run_episode(observation, call_tool, seed=seed)
        turn = 0
        while True:
            for step in gold.steps:
                if (step.turn or 0) == turn:
                    call_tool(step.tool, dict(step.arguments))
            if user.send(gold.reply or "Done.").ended:
                return AgentRun(reply=gold.reply or "Done.", turns=len(gold.steps) + 1, stop_reason="user_stop")
            turn += 1
