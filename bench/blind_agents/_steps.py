"""Steps left out or stopped short: missed_policy_dependency and gave_up_early."""

from __future__ import annotations

from typing import Any

from bench.blind_agents._policy import Episode, Stop, reads


def _independent(prereqs: list[tuple[str, dict[str, Any]]], call: dict[str, Any]) -> bool:
    """Whether the goal call's arguments and condition read none of the prerequisites' outputs."""
    names = {tool for tool, _ in prereqs}
    values = [*(call.get("arguments") or {}).values(), str(call.get("when") or "").lstrip("!")]
    return not any(reads(v, names) for v in values)


# missed_policy_dependency ---------------------------------------------------------------------------


class SkipPrerequisite(Episode):
    """Goes straight to the goal call: the checks the policy requires before it are never run."""

    def run_prerequisites(self, tool: str, args: dict[str, Any], raw: dict[str, Any]) -> None:
        """Skip every required prerequisite the goal call does not read from."""
        needed = self.needed_prerequisites(tool, args)
        if needed and _independent(needed, self.current):
            self.injected = True
            return
        super().run_prerequisites(tool, args, raw)


class PrerequisiteAfterGoal(Episode):
    """Runs the required check, but only after the goal call it should have preceded ("paperwork afterwards")."""

    _late: list[tuple[str, dict[str, Any]]]

    def run_goal(self, call: dict[str, Any], index: int) -> None:
        """Make the goal call, then its prerequisites."""
        self._late = []
        super().run_goal(call, index)
        for before, filled in self._late:
            self.run_prerequisite(before, filled)

    def run_prerequisites(self, tool: str, args: dict[str, Any], raw: dict[str, Any]) -> None:
        """Put the prerequisites off until after the goal call."""
        needed = self.needed_prerequisites(tool, args)
        if needed and _independent(needed, self.current):
            self.injected = True
            self._late = needed
            return
        super().run_prerequisites(tool, args, raw)


class EyeballInsteadOfCheck(Episode):
    """Replaces the required check with a look at the record ("I can see it is fine").

    It reads the entity with its get tool instead of running the prerequisite the policy names.
    """

    def run_prerequisites(self, tool: str, args: dict[str, Any], raw: dict[str, Any]) -> None:
        """Read the prerequisite's entity instead of running the prerequisite."""
        needed = self.needed_prerequisites(tool, args)
        if not needed or not _independent(needed, self.current):
            super().run_prerequisites(tool, args, raw)
            return
        self.injected = True
        for before, filled in needed:
            entity = self.specs[before].entity
            get = self.tool_for(entity, "get") if entity else None
            if get is None or get == before:
                continue
            param = self.id_param(get, str(entity))
            if param in filled:
                self.call_with_recovery(get, {param: filled[param]})


# gave_up_early --------------------------------------------------------------------------------------


def _goal_words(intent: dict[str, Any]) -> str:
    return str(intent.get("goal", "this request")).replace("_", " ")


class StopAfterLookup(Episode):
    """Looks everything up, then hands the request back for confirmation instead of acting."""

    def run_goals(self) -> None:
        """Stop before the first goal call."""
        if self.goal_calls:
            self.injected = True
            found = ", ".join(f"{name} {value}" for name, value in self.bindings.items())
            raise Stop(f"I have pulled up the records ({found}). Before I {_goal_words(self.intent)}, could you "
                       "confirm you want me to go ahead?")
        super().run_goals()


class DeclineOutright(Episode):
    """Declines at once, without a single tool call, saying it cannot handle this kind of request."""

    def resolve_all(self) -> None:
        """Stop before looking anything up."""
        self.injected = True
        raise Stop("I'm sorry, I'm not able to help with this request. Please contact the team that owns it.")


class StopAfterChecks(Episode):
    """Resolves the records and runs the required checks for the first action, then stops to ask for a go-ahead."""

    def run_goals(self) -> None:
        """Run the first goal call's prerequisites, then stop."""
        if not self.goal_calls:
            super().run_goals()
            return
        first = self.goal_calls[0]
        tool = str(first["tool"])
        raw: dict[str, Any] = dict(first.get("arguments") or {})
        before = set(self.strong.get(tool, []))
        early = {k: self.value(v, tool) for k, v in raw.items() if not reads(v, before)}
        self.run_prerequisites(tool, early, raw)
        self.injected = True
        checked = [name for name in before if name in self.outputs]
        note = f" I ran {', '.join(checked)}." if checked else ""
        raise Stop(f"I have reviewed the request.{note} Shall I go ahead and {_goal_words(self.intent)}?")


class AskWhichOne(Episode):
    """Asks which record is meant, although the details the requester gave single one out.

    When a search returns several similar records it stops and asks instead of using the hints.
    """

    def choose(self, ref: dict[str, Any], hits: list[dict[str, Any]]) -> dict[str, Any]:
        """Stop and ask instead of using the hints."""
        best = super().choose(ref, hits)
        hints = ref.get("hint", {})
        if len(hits) > 1 and hints and self.hint_score(ref, best) == len(hints):
            self.injected = True
            raise Stop(f"I found {len(hits)} records matching {ref['mention']!r}. Which one do you mean? "
                       "Please send me more details and I will continue.")
        return best


class StopMidway(Episode):
    """Does the first step of a multi-step request and stops there, leaving the rest for later."""

    def run_goal(self, call: dict[str, Any], index: int) -> None:
        """Stop after the first goal call when later ones would have run."""
        super().run_goal(call, index)
        if index != 0 or len(self.goal_calls) < 2 or str(call["tool"]) not in self.outputs:
            return
        rest = [c for c in self.goal_calls[1:] if not c.get("when") or self.holds(str(c["when"]))]
        if rest:
            self.injected = True
            raise Stop(f"I've done the first step ({call['tool'].replace('_', ' ')}). The remaining steps need "
                       "another look; I'll leave them for now.")
