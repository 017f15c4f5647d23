"""Where the agent stopped: searches it did not fetch, giving up before the work, answering or asking back."""

from __future__ import annotations

import json
from typing import Any

from arena.core.episode import EpisodeRecord
from arena.core.results import TraceStep
from arena.core.task import EntityRef, Task
from diagnosis._program import mistaken_ids
from diagnosis._reference import Reference, attempted, missing_calls, on_record, reference
from diagnosis._reply import ReplyReading, read_reply
from diagnosis._trace import failed_assertion_kinds, is_conflict, is_id_like, later_ok, mentions, summaries
from diagnosis.context import DiagnosisContext
from diagnosis.models import Evidence

_BLOCKING = frozenset({"fault", "conflict", "not_found", "validation", "policy", "permission"})


def goal_tools(task: Task | None) -> set[str]:
    return {call.tool for call in task.intent.calls} if task is not None else set()


def is_question(task: Task | None, ctx: DiagnosisContext) -> bool:
    """Whether the task asks for an answer: its goal calls (if any) only read."""
    return task is not None and all(ctx.tool(c.tool).mode == "read" for c in task.intent.calls)


def unfetched_searches(episode: EpisodeRecord, ctx: DiagnosisContext, *,
                       policy: bool = False) -> list[tuple[Evidence, bool]]:
    """Searches of an entity the agent did not fetch afterwards (in time), each with whether it had an id to fetch.

    It had one when the search found the record (one hit, or one hit named as the request names it and matching
    the details it gives), the search was for an id, or the request names the entity by id; several hits that fit
    the request leave the agent to choose, and stopping there to ask is giving up.
    Searches the task does not need fetched, or whose hits were all read already, are left out, and so is the last
    call before a reply stopping at the agent's own limit ("I ran out of steps") when the reply names none of its
    hits (the agent never used them: it stopped, ``gave_up_early``'s); so are those whose
    fetch the policy requires before a call the agent made afterwards (a skipped prerequisite explains them
    first: ``missed_policy_dependency``'s), which ``policy`` asks for alone.
    """
    trace = episode.trace
    task = ctx.task(episode.pack_id, episode.task_id)
    refs = task.intent.refs if task is not None else []
    ref_entities = {r.entity for r in refs} if task is not None else None
    by_id = {r.entity for r in refs if r.mention_kind == "id"}
    own_limit = read_reply(episode.reply).stops_at_own_limit
    out: list[tuple[Evidence, bool]] = []
    flagged: set[str] = set()
    for step in trace:
        info = ctx.tool(step.tool)
        if not step.ok or info.operation != "search" or info.entity is None or info.entity in flagged:
            continue
        if ref_entities is not None and info.entity not in ref_entities:
            continue
        if step.index and is_conflict(trace[step.index - 1]):
            continue  # a look in the index to re-read a record that changed: a blind retry's (stale_state's)
        getter = ctx.get_tool_for(info.entity)
        if getter is None or _fetched_in_time(trace, step, getter, ctx):
            continue
        if task is not None and task.gold.steps and not _should_fetch(task, step.tool, getter, trace):
            continue
        required = any(getter in ctx.prerequisites.get(s.tool, []) and attempted(s) for s in trace[step.index + 1:])
        if required is not policy:
            continue
        found = summaries(step.output)
        if found and {str(s["id"]) for s in found} <= _fetched_before(trace, step.index, getter):
            continue  # every hit was already read by id: there is nothing left to fetch
        if own_limit and not any(attempted(s) for s in trace[step.index + 1:]) \
                and not any(mentions(episode.reply, str(s["id"])) for s in found):
            continue  # the last look before a stop at the agent's own limit, none of its hits used: the stop's
        named = _named_hits(found, [r for r in refs if r.entity == info.entity and r.mention_kind == "text"])
        note = (f"search found {len(found)} summaries, never called {getter}" if found
                else f"search found nothing, never called {getter}")
        flagged.add(info.entity)
        arg = next(iter(step.arguments), None)
        in_hand = (len(found) == 1 or len(named) == 1 or info.entity in by_id
                   or any(is_id_like(v) for v in step.arguments.values()))
        out.append((Evidence(step=step.index, tool=step.tool, argument=arg, note=note), in_hand))
    return out


def _named_hits(found: list[dict[str, Any]], refs: list[EntityRef]) -> list[dict[str, Any]]:
    """The hits named as the request names the entity (a field equal to its mention) and matching its details."""
    out = []
    for hit in found:
        for ref in refs:
            named = any(isinstance(v, str) and v.casefold() == ref.mention.casefold() for v in hit.values())
            if named and all(str(hit.get(k, "")).casefold() == str(v).casefold() for k, v in ref.hint.items()
                             if k in hit):
                out.append(hit)
                break
    return out


def _fetched_in_time(trace: list[TraceStep], search: TraceStep, getter: str, ctx: DiagnosisContext) -> bool:
    """Whether ``getter`` succeeded after the search; after a search that found nothing, before any write.

    An agent that searched, found nothing and acted on the record before fetching it acted on a record it had
    never seen, whatever it fetched later.
    """
    for step in trace[search.index + 1:]:
        if step.ok and step.tool == getter:
            return True
        if not summaries(search.output) and attempted(step) and (step.write or ctx.tool(step.tool).mode == "write"):
            return False
    return False


def _fetched_before(trace: list[TraceStep], before: int, getter: str) -> set[str]:
    """Ids of the records ``getter`` returned before step ``before``."""
    return {str(s.output["id"]) for s in trace[:before]
            if s.ok and s.tool == getter and isinstance(s.output, dict) and "id" in s.output}


def _should_fetch(task: Task, search: str, getter: str, trace: list[TraceStep]) -> bool:
    """Whether the task's program fetches what the agent searched for (else its search hits suffice).

    A search the program never makes means the record was to be reached by its id; a program that fetches
    before searching wants the record fetched at some point.
    """
    tools = [s.tool for s in task.gold.steps]
    if search not in tools:
        return True
    if getter in tools[tools.index(search) + 1:]:
        return True
    return getter in tools and not any(s.ok and s.tool == getter for s in trace)


def answers(episode: EpisodeRecord, reading: ReplyReading, question: bool) -> bool:
    """Whether the reply answers the task's question.

    It says something beyond courtesies (a sign-off is no answer), admits no failure, and is neither a question
    back nor a hand-over the reply checks reject
    (asking "which one do you mean?", or passing the question to a colleague, instead of answering).
    """
    if not (question and episode.reply.strip()) or reading.admits_failure or reading.only_courtesy:
        return False
    if reading.hands_over and not _reply_held(episode):
        return False
    return not (_asks_back(episode, reading) and not reading.claims and not _reply_held(episode))


def _asks_back(episode: EpisodeRecord, reading: ReplyReading) -> bool:
    """Whether the reply asks the requester something, not counting a question it quotes from a record it read."""
    if not reading.asks:
        return False
    read = " ".join(json.dumps(s.output, default=str) for s in episode.trace if s.ok).casefold()
    return any(question.rsplit(":", 1)[-1].strip().casefold() not in read for question in reading.questions)


def _finished(trace: list[TraceStep], ref: Reference) -> bool:
    """Whether the program's last goal call succeeded in the trace on its records (the agent reached the end)."""
    last = next(((tool, ids) for tool, ids in reversed(ref.program) if tool in ref.goal_tools), None)
    return last is not None and any(s.ok and s.tool == last[0] and on_record(s, last[1]) for s in trace)


def _unmet(trace: list[TraceStep], ref: Reference) -> list[str]:
    """The tools of the program's calls that never succeeded on their records, in program order, each once."""
    return list(dict.fromkeys(tool for tool, ids in ref.program
                              if not any(s.ok and s.tool == tool and on_record(s, ids) for s in trace)))


def _reply_held(episode: EpisodeRecord) -> bool:
    """Whether the episode's reply checks held (there was at least one): the reply gave the task's answer."""
    replies = [r for r in episode.verdict.results if r.kind == "response"] if episode.verdict is not None else []
    return bool(replies) and all(r.passed for r in replies)


def stopped_short(episode: EpisodeRecord, ctx: DiagnosisContext) -> Evidence | None:
    """Where the agent gave up before the task's work, with no error in the way and no success claimed.

    A call of the program the agent never made, then a reply admitting it could not finish, is giving up; a call it
    made on another record, then a refusal, is an answer about the wrong record (``wrong_id``'s), and so is a stop
    after acting on a record the agent took for the request's (the wrong record left it no way on); but a call on
    any record, then a hand-over to someone else, is giving up. A stop the reply puts down to the agent's own limit
    ("I ran out of steps") with program calls not made on their records is giving up whatever error came before:
    the agent, not the error, ended the work (an error it never retried is the failure's secondary kind).
    """
    trace = episode.trace
    task = ctx.task(episode.pack_id, episode.task_id)
    question = is_question(task, ctx)
    reading = read_reply(episode.reply, question=question)
    own_limit = reading.stops_at_own_limit
    if not own_limit and any(s.error is not None and s.error.kind in _BLOCKING and not later_ok(trace, s.index, s.tool)
                             for s in trace):
        return None
    if reading.claims_success or answers(episode, reading, question):
        return None
    if task is not None and task.gold.steps:
        ref = reference(task)
        missing = missing_calls(trace, ref)
        never = [tool for tool in missing if not any(s.tool == tool for s in trace)]
        attempted_goal = any(s.tool in ref.goal_tools for s in trace)
        unmet = _unmet(trace, ref) if own_limit and not _finished(trace, ref) else []
        if mistaken_ids(trace, ref) and not reading.hands_over:
            return None  # the record it took for the request's left it no way on: the wrong id's consequence
        if ref.does_goal and not attempted_goal:
            what = ", ".join(sorted(ref.goal_tools & ref.tools))
        elif ((never and reading.admits_failure) or (missing and reading.hands_over)) \
                and (ref.does_goal or not _reply_held(episode)) and not _finished(trace, ref):
            what = ", ".join(sorted(set(missing if reading.hands_over else never)))
        elif unmet or (own_limit and (question or not ref.does_goal) and not _reply_held(episode)):
            what = ", ".join(unmet) or "the answer the task wants (it stopped at its own limit)"
        elif not ref.does_goal and _asks_back(episode, reading) and not reading.admits_failure \
                and not _reply_held(episode):
            what = "the answer the task wants (it asked back instead)"
        elif (question or not ref.does_goal) and reading.hands_over and not _reply_held(episode):
            what = "the answer the task wants (it handed the request over instead)"
        else:
            return None
    else:
        goals = goal_tools(task)
        if goals:
            attempted_goal, needs_goal = any(s.tool in goals for s in trace), True
        else:
            attempted_goal = any(s.write or ctx.tool(s.tool).mode == "write" for s in trace)
            needs_goal = "state" in failed_assertion_kinds(episode)
        if attempted_goal or not (needs_goal or reading.admits_failure or reading.hands_over):
            return None
        what = ", ".join(sorted(goals)) if goals else "any write"
    note = f"stopped after {len(trace)} calls without calling {what}"
    last = trace[-1] if trace else None
    return Evidence(note=note) if last is None else Evidence(step=last.index, tool=last.tool, note=note)
