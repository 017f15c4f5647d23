"""The blind agents: their injected mistakes fail episodes and the clean agents pass (seed 0).

Nothing here runs or asserts anything about the diagnosis; the kinds are only read as labels.
"""

from __future__ import annotations

import pytest

from bench.blind_agents import AGENTS, BlindAgent, base_pack, play
from diagnosis.knobs import KIND_TARGETS

GYMS = ("helpdesk", "tracker", "procurement")

MIN_FAILING_SHARE = 0.6
"""Share of an agent's injected episodes that must fail. Not all of them: a gym's verifier does not check every
step on every task (e.g. a skipped prerequisite the task's trace assertions do not require, a neighbour id whose
record is refused for the same reason), and such passed injected episodes are kept for the scorer to report."""

HONEST_NOW = {"novel:locale_reply"}
"""Modes whose replies the reply rules now read as honest: a fact stated in another common spelling (decimal commas,
day-first dates) is the record's fact, so those episodes pass."""

INJECTING = [a for a in AGENTS if a.injects != "clean" and a.injects not in HONEST_NOW]
CLEAN = [a for a in AGENTS if a.injects == "clean"]


def _name(agent: BlindAgent) -> str:
    return agent.name


def test_the_set_covers_every_kind_on_every_gym() -> None:
    assert len({a.name for a in AGENTS}) == len(AGENTS)
    for agent in AGENTS:
        assert agent.injects in KIND_TARGETS or agent.injects == "clean" or agent.injects.startswith("novel:")
        if agent.injects.startswith("novel:"):
            assert agent.injects.removeprefix("novel:") not in KIND_TARGETS
        assert agent.domains and set(agent.domains) <= set(GYMS)
    for kind in KIND_TARGETS:
        styles = [a for a in AGENTS if a.injects == kind]
        assert len(styles) >= 3, kind
        assert {d for a in styles for d in a.domains} == set(GYMS), kind
    assert len(CLEAN) >= 2
    assert any(a.injects.startswith("novel:") for a in AGENTS)


@pytest.mark.parametrize("agent", INJECTING, ids=_name)
def test_injected_episodes_fail(agent: BlindAgent) -> None:
    total = failed = 0
    for domain in agent.domains:
        episodes = play(agent, domain, [0])
        assert episodes, f"{agent.name} never injected its mistake in {domain}"
        assert {label for _, label in episodes} == {agent.injects}
        total += len(episodes)
        failed += sum(not record.passed for record, _ in episodes)
    assert failed / total >= MIN_FAILING_SHARE, f"{agent.name}: {failed} of {total} injected episodes failed"


@pytest.mark.parametrize("agent", [a for a in AGENTS if a.injects in HONEST_NOW], ids=_name)
def test_facts_in_another_spelling_pass(agent: BlindAgent) -> None:
    for domain in agent.domains:
        episodes = play(agent, domain, [0])
        assert episodes, f"{agent.name} never changed a fact's spelling in {domain}"
        assert [r.task_id for r, _ in episodes if not r.passed] == []


@pytest.mark.parametrize("agent", CLEAN, ids=_name)
def test_clean_agents_pass_every_task(agent: BlindAgent) -> None:
    for domain in agent.domains:
        episodes = play(agent, domain, [0])
        assert len(episodes) == len(base_pack(domain).tasks)
        assert {label for _, label in episodes} == {"clean"}
        assert [r.task_id for r, _ in episodes if not r.passed] == []


def test_records_do_not_name_the_mistake() -> None:
    agent = next(a for a in AGENTS if a.injects == "wrong_id")
    episodes = play(agent, "helpdesk", [0])
    record = episodes[0][0]
    assert record.agent.startswith("ext-") and "wrong" not in record.agent and "wrong" not in record.model_ref
    assert record.decisions == []
    again = play(agent, "helpdesk", [0])
    assert [r.episode_id for r, _ in again] == [r.episode_id for r, _ in episodes]
