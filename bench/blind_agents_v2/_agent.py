"""An agent with a careful mind and a hand that slips in one known way."""

from __future__ import annotations

from arena.agents.base import AgentRun, CallTool
from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.core.gym import Observation
from bench.blind_agents_v2._hand import Hand, Stop
from bench.blind_agents_v2._voice import Voice

_CAREFUL = PolicyParams.expert()


class SlipAgent:
    """Plays an episode with the careful reference policy deciding and a ``Hand`` carrying its calls.

    Implements ``arena.agents.base.Agent``. Like a model answering in text, it always ends with a reply
    (``stop_reason`` ``reply``; ``step_limit`` when it stopped for lack of steps).

    Args:
        name: The agent's name (also its episodes' agent name, so each blind agent's episodes are its own).
        hand: The hand class (its mistake style).
        voice: How it words replies.
        slips: Whether the mistake is on; off, it plays every task cleanly in the same voice.
    """

    def __init__(self, name: str, hand: type[Hand], voice: Voice, *, slips: bool = True) -> None:
        self.name = name
        self.hand = hand
        self.voice = voice
        self.slips = slips
        self.last_slipped = False

    @property
    def model_ref(self) -> str:
        """The agent's name, as its model reference."""
        return self.name

    def run_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
        """Play one episode; ``last_slipped`` then says whether the mistake applied."""
        hand = self.hand(observation, call_tool, slips=self.slips, voice=self.voice)
        stop_reason = "reply"
        try:
            run = ReferencePolicy(_CAREFUL).run_episode(observation, hand, seed=seed)
            reply = hand.final_reply(run.reply)
        except Stop as stop:
            reply, stop_reason = stop.reply, stop.stop_reason
        self.last_slipped = hand.slipped
        return AgentRun(reply=reply, turns=len(hand.steps) + 1, stop_reason=stop_reason)
