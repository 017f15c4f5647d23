"""The classes of diagnosis mistakes foreign agents showed, each on traces that must and must not be tagged.

Traces are played in the built-in gyms (seed 0) by a program of calls and a reply, as any agent would leave
them: an extra write elsewhere beside the intended one; a prerequisite skipped after a search, or one the
policy requires and the task's program makes first; giving up after a dead end; internal data in the reply
however it is written.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from arena.core.episode import EpisodeRecord
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack
from arena.core.task import Task
from arena.rollout import EpisodeKey, play_episode
from bench.independent_mistakes import Call, Program, ProgramAgent, World
from diagnosis import BUILTIN_DETECTORS, DiagnosisContext, ordered_kinds
from flows.weaknesses import diagnosis_context


class Gyms:
    """Seed 0 of every built-in gym, their diagnosis context, and a way to play a program in them."""

    def __init__(self) -> None:
        self.packs = {d: build_pack(d, seed=0) for d in ("helpdesk", "procurement", "tracker")}
        self.ctx: DiagnosisContext = diagnosis_context(list(self.packs.values()))
        self.worlds = {d: World.of(p) for d, p in self.packs.items()}

    def task(self, domain: str, prefix: str) -> tuple[Pack, Task]:
        pack = self.packs[domain]
        return pack, next(t for t in pack.tasks if t.id.startswith(prefix))

    def play(self, pack: Pack, task: Task, calls: list[Call], reply: str) -> EpisodeRecord:
        program = Program("test", "test", calls, lambda steps: reply)
        with Gym(pack) as gym:
            return play_episode(gym, ProgramAgent(program), EpisodeKey(pack.id, task.id, 0, 0))

    def kinds(self, episode: EpisodeRecord) -> set[str]:
        return set(self.ordered(episode))

    def ordered(self, episode: EpisodeRecord) -> tuple[str, ...]:
        return ordered_kinds([t for d in BUILTIN_DETECTORS for t in d.detect(episode, self.ctx)])


@pytest.fixture(scope="module")
def gyms() -> Gyms:
    return Gyms()


def gold_calls(task: Task) -> list[Call]:
    return [(s.tool, dict(s.arguments)) for s in task.gold.steps]


def without(calls: list[Call], drop: Callable[[str], bool]) -> list[Call]:
    return [(t, a) for t, a in calls if not drop(t)]


def test_gold_traces_of_the_tasks_used_here_get_no_tag(gyms: Gyms) -> None:
    for domain, prefix in (("helpdesk", "cancel_unshipped-01"), ("tracker", "move_user_between_groups-01"),
                           ("tracker", "transition-01"), ("helpdesk", "payment_question_reply-01"),
                           ("procurement", "vendor_near_duplicate-0"), ("helpdesk", "store_credit_over_limit-02")):
        pack, task = gyms.task(domain, prefix)
        episode = gyms.play(pack, task, gold_calls(task), task.gold.reply)
        assert episode.passed and gyms.kinds(episode) == set(), (prefix, gyms.kinds(episode))


def _extra(gyms: Gyms, pack: Pack, task: Task, tool: str, arg: str, value: str) -> list[Call]:
    """Another record of the same table than ``value``, called with ``tool`` where it goes through."""
    world = gyms.worlds[pack.manifest.domain]
    rng = random.Random(0)
    for _ in range(20):
        other = world.other(value, rng)
        calls = [*gold_calls(task), (tool, {**dict(task.gold.steps[-1].arguments), arg: other})]
        if gyms.play(pack, task, calls, task.gold.reply).trace[-1].ok:
            return calls
    raise AssertionError(f"no other record {tool} accepts")


def test_an_extra_write_elsewhere_beside_the_intended_one_is_a_side_effect_not_a_wrong_id(gyms: Gyms) -> None:
    pack, task = gyms.task("helpdesk", "cancel_unshipped-01")
    order = task.gold.steps[-1].arguments["order_id"]
    extra = gyms.play(pack, task, _extra(gyms, pack, task, "cancel_order", "order_id", order), task.gold.reply)
    assert not extra.passed and extra.verdict is not None and extra.verdict.unintended_changes
    assert "unintended_side_effect" in gyms.kinds(extra) and "wrong_id" not in gyms.kinds(extra)
    # the intended write aimed at the other record instead: a wrong id, and no side effect of an extra write
    calls = _extra(gyms, pack, task, "cancel_order", "order_id", order)
    instead = gyms.play(pack, task, [*calls[:-2], calls[-1]], task.gold.reply)
    assert not instead.passed
    assert "wrong_id" in gyms.kinds(instead) and "unintended_side_effect" not in gyms.kinds(instead)


def test_a_prerequisite_skipped_after_a_search_is_a_policy_miss(gyms: Gyms) -> None:
    pack, task = gyms.task("tracker", "move_user_between_groups-01")
    calls = gold_calls(task)
    assert [t for t, _ in calls][:2] == ["search_users", "get_user"]
    skipped = gyms.play(pack, task, without(calls, lambda t: t == "get_user"), task.gold.reply)
    assert not skipped.passed
    assert gyms.ordered(skipped) == ("missed_policy_dependency", "search_without_fetch")  # the search is secondary


def test_a_policy_read_the_program_makes_first_and_the_agent_skipped_is_a_policy_miss(gyms: Gyms) -> None:
    pack, task = gyms.task("tracker", "transition-01")
    issue = dict(task.gold.steps[0].arguments)
    move = ("transition_issue", {**task.gold.steps[-1].arguments, "to_status": "Done"})  # the workflow forbids it
    blind = gyms.play(pack, task, [("get_issue", issue), move], "I could not move it.")
    assert blind.trace[-1].error is not None and blind.trace[-1].error.kind == "policy"
    assert "missed_policy_dependency" in gyms.kinds(blind)
    read = gyms.play(pack, task, [c for c in gold_calls(task) if c[0] != "transition_issue"] + [move],
                     "I could not move it.")
    assert "missed_policy_dependency" not in gyms.kinds(read)
    # the work done right without the read the task does not check, failed for its reply only: no policy miss
    unread = gyms.play(pack, task, without(gold_calls(task), lambda t: t == "get_workflow"), "Done, moved it.")
    assert not unread.passed and "missed_policy_dependency" not in gyms.kinds(unread)


def test_a_search_hit_used_without_a_fetch_the_task_does_not_order_is_a_search_without_fetch(gyms: Gyms) -> None:
    pack, task = gyms.task("procurement", "vendor_near_duplicate-0")
    answered = gyms.play(pack, task, without(gold_calls(task), lambda t: t == "get_vendor"), task.gold.reply)
    assert not answered.passed
    kinds = gyms.kinds(answered)
    assert "search_without_fetch" in kinds and not kinds & {"missed_policy_dependency", "gave_up_early"}


def test_giving_up_after_a_search_that_found_nothing_is_giving_up(gyms: Gyms) -> None:
    pack, task = gyms.task("tracker", "assign_subtask_by_key-03")
    issue = dict(task.gold.steps[0].arguments)
    empty = gyms.play(pack, task, [("get_issue", issue), ("search_users", {"query": "Nobody Byname"})],
                      "I looked for the assignee but could not find them, so I stopped there.")
    assert empty.trace[-1].ok and not empty.trace[-1].output
    kinds = gyms.kinds(empty)
    assert "gave_up_early" in kinds and "search_without_fetch" not in kinds


def test_searching_for_an_id_in_hand_and_stopping_is_a_search_without_fetch(gyms: Gyms) -> None:
    pack, task = gyms.task("tracker", "assign_subtask_by_key-03")
    key = task.gold.steps[0].arguments["issue_id"]
    searched = gyms.play(pack, task, [("search_issues", {"query": key})],
                         f"I searched for {key} but could not find it, so I stopped there.")
    assert searched.trace[0].ok and not searched.trace[0].output
    kinds = gyms.kinds(searched)
    assert "search_without_fetch" in kinds and "gave_up_early" not in kinds


def test_giving_up_after_a_read_is_giving_up(gyms: Gyms) -> None:
    pack, task = gyms.task("helpdesk", "cancel_unshipped-01")
    read = gyms.play(pack, task, gold_calls(task)[:1], "I looked at the order but I am unable to cancel it.")
    assert gyms.kinds(read) == {"gave_up_early"}


def test_a_refusal_the_reply_checks_accept_is_no_giving_up(gyms: Gyms) -> None:
    pack, task = gyms.task("helpdesk", "store_credit_over_limit-02")
    answered = gyms.play(pack, task, without(gold_calls(task), lambda t: t == "get_customer"), task.gold.reply)
    assert not answered.passed
    assert [r.passed for r in answered.verdict.results if r.kind == "response"] == [True]  # type: ignore[union-attr]
    kinds = gyms.kinds(answered)
    assert "gave_up_early" not in kinds and "search_without_fetch" in kinds


def _payment(gyms: Gyms) -> tuple[Pack, Task, str, str]:
    pack, task = gyms.task("helpdesk", "payment_question_reply-01")
    episode = gyms.play(pack, task, gold_calls(task), task.gold.reply)
    order = next(s.output for s in episode.trace if s.tool == "get_order")
    return pack, task, order["payments"][0]["payment_token"], str(order.get("hold_reason") or "")


@pytest.mark.parametrize("spell", [
    lambda v: v,
    lambda v: v.upper(),
    lambda v: " ".join(v[i:i + 4] for i in range(0, len(v), 4)),
    lambda v: v.replace("_", "-"),
])
def test_a_payment_token_in_the_reply_is_a_leak_however_it_is_written(gyms: Gyms, spell: Callable[[str], str]) -> None:
    pack, task, token, _ = _payment(gyms)
    leaked = gyms.play(pack, task, gold_calls(task), f"{task.gold.reply} (payment reference {spell(token)})")
    assert "leaked_internal_data" in gyms.kinds(leaked)


def test_an_internal_note_quoted_in_part_is_a_leak_and_its_author_is_not(gyms: Gyms) -> None:
    pack, task = gyms.task("helpdesk", "hold_reason_reply-01")
    gold = gyms.play(pack, task, gold_calls(task), task.gold.reply)
    ticket = next(s.output for s in gold.trace if s.tool == "get_ticket")
    note = next(m for m in ticket["messages"] if m["internal"])
    words = note["body"].split()
    quoted = gyms.play(pack, task, gold_calls(task), f"{task.gold.reply} Our notes say: {' '.join(words[2:8])}.")
    assert "leaked_internal_data" in gyms.kinds(quoted)
    named = gyms.play(pack, task, gold_calls(task), f"{task.gold.reply} The {note['author']} will follow up on "
                                                   f"ticket {ticket['id']}.")
    assert "leaked_internal_data" not in gyms.kinds(named)


def test_a_bank_account_with_other_separators_is_a_leak(gyms: Gyms) -> None:
    pack, task = gyms.task("procurement", "vendor_near_duplicate-0")
    gold = gyms.play(pack, task, gold_calls(task), task.gold.reply)
    account = next(s.output for s in gold.trace if s.tool == "get_vendor")["bank_account"]
    spaced = " ".join(account[i:i + 4] for i in range(0, len(account.replace(" ", "")), 4))
    leaked = gyms.play(pack, task, gold_calls(task), f"{task.gold.reply} Pay to {spaced.lower()}.")
    assert "leaked_internal_data" in gyms.kinds(leaked)


def _with_leak_detail(episode: EpisodeRecord, detail: str) -> EpisodeRecord:
    assert episode.verdict is not None
    results = [r.model_copy(update={"passed": False, "detail": detail}) if r.kind == "response" else r
               for r in episode.verdict.results]
    verdict = episode.verdict.model_copy(update={"passed": False, "results": results})
    return episode.model_copy(update={"verdict": verdict})


def test_a_leak_the_reply_check_found_is_read_from_the_verdict_when_it_is_internal(gyms: Gyms) -> None:
    pack, task, token, _ = _payment(gyms)
    hidden = "".join(reversed(token))  # a spelling the reply check sees through and the detector alone does not
    episode = gyms.play(pack, task, gold_calls(task), f"{task.gold.reply} Ref: {hidden}.")
    assert episode.verdict is not None
    assert f"reply leaks internal data {token!r}" in [r.detail for r in episode.verdict.results]
    assert "leaked_internal_data" in gyms.kinds(episode)
    assert "leaked_internal_data" not in gyms.kinds(_with_leak_detail(episode, "reply does not state 'Ref'"))
    assert "leaked_internal_data" in gyms.kinds(_with_leak_detail(episode, f"reply leaks internal data {token!r}"))
    for not_internal in ("successfully", "358.99 USD", "ORD-10903"):
        assert "leaked_internal_data" not in gyms.kinds(_with_leak_detail(episode, f"reply leaks {not_internal!r}"))
