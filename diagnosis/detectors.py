"""The built-in detectors, one small class per weakness kind, registered by name on import."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import date
from typing import Any

from arena.core import patterns
from arena.core.episode import EpisodeRecord
from arena.core.results import TraceStep
from arena.core.task import ResponseAssertion, Task
from arena.core.values import parse_amount
from arena.core.weakness import WeaknessKind
from diagnosis._leaks import compact, internal_values, is_internal_text, says, verdict_leaks
from diagnosis._program import done_calls, mistaken_ids, required_order, stands_in, step_ids
from diagnosis._reference import (
    Ids,
    Reference,
    attempted,
    id_prefix,
    id_values,
    intended_done,
    on_record,
    reference,
    same_record,
    text_ids,
)
from diagnosis._reply import read_reply
from diagnosis._stopping import answers, goal_tools, is_question, stopped_short, unfetched_searches
from diagnosis._trace import (
    error_argument,
    failed_assertion_kinds,
    id_arguments,
    is_conflict,
    is_created_id,
    is_id_like,
    is_unknown_tool_error,
    known_ids,
    later_call,
    later_ok,
    mentions,
    output_ids,
    reply_states_observed_fact,
    states_field,
    states_number,
    summaries,
)
from diagnosis.context import DiagnosisContext
from diagnosis.detector import register_detector
from diagnosis.models import Evidence, Tag

_MAX_EVIDENCE = 5
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
"""A date as the tools write it."""


def _tag(kind: WeaknessKind, evidence: list[Evidence]) -> list[Tag]:
    return [Tag(kind=kind, evidence=evidence[:_MAX_EVIDENCE])] if evidence else []


def _is_record(output: Any, key: str) -> bool:
    """Whether a tool's output is the record ``key``: its ``id``, or with no ``id`` its first ``<entity>_id``.

    A write returning a record without ``id`` leads with the record's own id (``{"order_id": ..., "shipping_address":
    ...}``); the ids after it name other records it refers to (a new level's ``security_scheme_id``).
    """
    if not isinstance(output, dict):
        return False
    if "id" in output:
        return str(output["id"]) == key
    own = next((value for name, value in output.items() if name.endswith("_id")), None)
    return own is not None and str(own) == key


def _amount(value: Any) -> float | None:
    """The number a field holds, as a number or as text that is one whole amount (``"12,500.00"``), else ``None``.

    A record may hold an amount as text and a write return it as a number: the same field, read either way.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        parsed = parse_amount(value)
        return None if parsed is None else float(parsed)
    return None


def _exchanged(trace: list[TraceStep], ref: Reference, step: TraceStep, got: set[str],
               wanted: set[str]) -> Iterator[bool]:
    """For each other call: whether it passes ``wanted`` under an argument where the program passes ``got``.

    ``step`` passed ``got`` where the program passes ``wanted``; a call the other way round, made on no record the
    program makes that tool's calls on, swapped the two.
    """
    for other in trace:
        if other.index == step.index or not attempted(other) or any(
                tool == other.tool and on_record(other, ids) for tool, ids in ref.program):
            continue
        for tool, ids in ref.program:
            if tool != other.tool:
                continue
            yield any(got & want and wanted & set(id_values(name, other.arguments.get(name)))
                      for name, want in ids.items())


def _is_iso_date(value: str) -> bool:
    """Whether ``value`` is a real calendar date written ``YYYY-MM-DD``, the way the tools write dates."""
    if _ISO_DATE.fullmatch(value) is None:
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _aside(kind: str, evidence: list[Evidence]) -> list[Tag]:
    """A tag of a kind set aside for another that explains the failure first (``Tag.secondary``)."""
    return [Tag(kind=kind, evidence=evidence[:_MAX_EVIDENCE], secondary=True)] if evidence else []


def _is_id_argument(arg: str) -> bool:
    """Whether an argument names an entity (a refusal there is about which record, not about a format)."""
    return arg.endswith(("_id", "_ids")) or arg == "id"


def _hint_matches(summary: dict[str, Any], hint: dict[str, str]) -> bool:
    return all(str(summary.get(k, "")).casefold() == str(v).casefold() for k, v in hint.items())


class WrongIdDetector:
    """Calls that name the wrong entity: a name passed as an id, an unknown id, another record, or swapped ids."""

    name = WeaknessKind.WRONG_ID

    def detect(self, episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Tag]:
        """Tag calls (reads and writes) whose entity id is malformed, unknown, or not one the task concerns."""
        trace = episode.trace
        known = known_ids(trace)
        evidence: list[Evidence] = []
        for step in trace:
            refused = step.error is not None and step.error.kind in ("not_found", "validation")
            for arg, value in id_arguments(step):
                if (refused and isinstance(value, str) and value and not is_id_like(value)
                        and value not in known):
                    evidence.append(Evidence(step=step.index, tool=step.tool, argument=arg,
                                             note=f"passed {value!r} where an id is required"))
                elif (step.error is not None and step.error.kind == "not_found"
                      and error_argument(step) in (arg, None)
                      and not (isinstance(value, str) and is_created_id(value))
                      and not later_ok(trace, step.index, step.tool)):
                    evidence.append(Evidence(step=step.index, tool=step.tool, argument=arg,
                                             note=f"id {value!r} does not exist"))
        task = ctx.task(episode.pack_id, episode.task_id)
        if task is not None and task.gold.steps:
            evidence.extend(self._against_gold(trace, reference(task)))
            evidence.extend(self._reply_subject(episode.reply, reference(task)))
        elif task is not None:
            evidence.extend(self._against_refs(trace, task, ctx))
        return _tag(self.name, evidence)

    @staticmethod
    def _against_gold(trace: list[TraceStep], ref: Reference) -> list[Evidence]:
        """Ids the task's own program never uses: another record of the table, or two ids swapped.

        An id a call returned earlier is the agent following the data (a record's customer, a search hit)
        unless the task's program makes the same call with other ids; ids the episode created are its own.
        A call on another record is a wrong id only where it takes the place of a call the program makes
        (``stands_in``): an extra write elsewhere, beside the intended one made right, is a side effect.
        """
        out: list[Evidence] = []
        seen: set[str] = set()
        done = done_calls(trace, ref)
        for step in trace:
            if not stands_in(step, done):
                if step.ok:
                    seen.update(output_ids(step.output))
                continue
            if step.ok or (step.error is not None and step.error.kind in ("policy", "conflict", "fault")):
                for arg, value in step.arguments.items():
                    for v in id_values(arg, value):
                        if v in ref.ids or is_created_id(v) or not is_id_like(v):
                            continue
                        expected = ref.ids_by_call.get((step.tool, arg))
                        if expected:
                            note = f"{step.tool} on {v}; the task concerns {', '.join(sorted(expected))}"
                        elif v not in seen:
                            note = f"{step.tool} on {v}, a record the task never concerns"
                        else:
                            continue
                        out.append(Evidence(step=step.index, tool=step.tool, argument=arg, note=note))
                for arg, value in step.arguments.items():
                    expected = ref.ids_by_call.get((step.tool, arg))
                    if not expected:
                        continue
                    for v in id_values(arg, value):
                        if v in ref.ids and v not in expected:
                            out.append(Evidence(step=step.index, tool=step.tool, argument=arg,
                                                note=f"{v} passed as {arg}; the task passes "
                                                     f"{', '.join(sorted(expected))}"))
            if step.ok:
                seen.update(output_ids(step.output))
        return out

    @staticmethod
    def _reply_subject(reply: str, ref: Reference) -> list[Evidence]:
        """A reply about another record than the one asked about.

        The requested id the program's reply names is missing, and an id of the same kind the program's reply never
        names stands in its place.
        """
        said = text_ids(reply)
        missing = sorted((ref.requested & ref.reply_ids) - said)
        instead = sorted(v for v in said - ref.reply_ids if any(id_prefix(v) == id_prefix(m) for m in missing))
        if not missing or not instead:
            return []
        return [Evidence(note=f"reply answers about {', '.join(instead)}; the request asks about {', '.join(missing)}")]

    def _against_refs(self, trace: list[TraceStep], task: Task, ctx: DiagnosisContext) -> list[Evidence]:
        out: list[Evidence] = []
        by_entity: dict[str, list[Any]] = {}
        for ref in task.intent.refs:
            by_entity.setdefault(ref.entity, []).append(ref)
        for entity, refs in by_entity.items():
            param = f"{entity}_id"
            if all(r.mention_kind == "id" for r in refs):
                mentions = {r.mention for r in refs}
                for step in trace:
                    value = step.arguments.get(param)
                    if (step.ok and step.write and isinstance(value, str) and is_id_like(value)
                            and value not in mentions and not is_created_id(value)):
                        out.append(Evidence(step=step.index, tool=step.tool, argument=param,
                                            note=f"acted on {value}, the request named {', '.join(sorted(mentions))}"))
            for ref in refs:
                if ref.mention_kind == "text" and ref.hint:
                    out.extend(self._near_duplicate(trace, ref.entity, ref.hint, ctx))
        return out

    def _near_duplicate(
        self, trace: list[TraceStep], entity: str, hint: dict[str, str], ctx: DiagnosisContext
    ) -> list[Evidence]:
        param = f"{entity}_id"
        candidates: set[str] = set()
        matching: set[str] = set()
        for step in trace:
            if ctx.tool(step.tool).operation == "search" and ctx.tool(step.tool).entity == entity:
                for summary in summaries(step.output):
                    candidates.add(str(summary["id"]))
                    if _hint_matches(summary, hint):
                        matching.add(str(summary["id"]))
        if not matching or len(candidates) < 2:
            return []
        used = [(s, s.arguments.get(param)) for s in trace if s.ok and param in s.arguments]
        if any(v in matching for _, v in used):
            return []
        return [
            Evidence(step=s.index, tool=s.tool, argument=param,
                     note=f"picked near-duplicate {v}; the request's details match {', '.join(sorted(matching))}")
            for s, v in used if v in candidates
        ]


class MissedPolicyDependencyDetector:
    """A goal call made without the prerequisite the task, the dependency graph or the policy requires."""

    name = WeaknessKind.MISSED_POLICY_DEPENDENCY

    def detect(self, episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Tag]:
        """Tag calls made while a prerequisite the task orders before them had not been attempted.

        With the task known, its own ordering constraints are the prerequisites (they hold only where the
        task's conditions hold, and weak orderings count); otherwise the graph's strong edges, only in
        episodes whose state or trace check failed (graph edges can be conditional). A prerequisite that
        was called but refused or failed was not missed.
        """
        task = ctx.task(episode.pack_id, episode.task_id)
        effect_failed = episode.verdict is None or bool({"state", "trace"} & failed_assertion_kinds(episode))
        if task is not None and task.gold.steps:
            return _tag(self.name, self._against_task(episode, reference(task), ctx, effect_failed))
        trace = episode.trace
        evidence: list[Evidence] = []
        for step in trace:
            refused = step.error is not None and step.error.kind == "policy"
            if not (effect_failed and (step.ok or refused)):
                continue
            prereqs = ctx.prerequisites.get(step.tool)
            if prereqs:
                for before in prereqs:
                    if self._satisfied(trace, step, before) or (refused and later_ok(trace, step.index, step.tool)):
                        continue
                    evidence.append(Evidence(step=step.index, tool=step.tool, argument=before,
                                             note=f"{step.tool} {'ran' if step.ok else 'was refused'} "
                                                  f"without prerequisite {before}"))
            elif refused and not ctx.prerequisites and not later_ok(trace, step.index, step.tool):
                evidence.append(Evidence(step=step.index, tool=step.tool, argument=error_argument(step),
                                         note=f"policy refused {step.tool}: {step.error.message[:120]}"
                                         if step.error else "policy refused"))
        return _tag(self.name, evidence)

    def _against_task(self, episode: EpisodeRecord, ref: Reference, ctx: DiagnosisContext,
                      effect_failed: bool) -> list[Evidence]:
        """Prerequisites skipped, judged against the task.

        A call on the records the task orders it for (an extra call of the tool on another record is no such call),
        made with no call before it of the tool the task orders first on its records (a check run on another
        record, a misread one, checks nothing of this one), is a policy miss; so is one made
        without the prerequisite the policy requires (a strong edge) and the task's program makes first, when the
        episode's state or trace check failed (a policy read the task does not check is missed only where the
        work went wrong). A policy prerequisite skipped is a policy miss whatever the agent did before it, a
        search included; a read the task orders but the policy does not require, skipped by an agent that
        searched its entity or left a search unfetched, is that search's consequence (``search_without_fetch``:
        a record reached through one never fetched cannot be read); so is every step skipped by an agent that
        searched for a record it had the id of, found nothing and never fetched it (it never saw the record the
        steps depend on). A prerequisite taken in order on a record the agent read in place of the task's, and kept
        to, is the wrong id's (``_kept_to_misread``).
        """
        trace = episode.trace
        out: list[Evidence] = []
        for step in trace:
            refused = step.error is not None and step.error.kind == "policy"
            if step.tool in ref.tools or not (step.ok or refused):
                continue
            for needed in ctx.prerequisites.get(step.tool, []):
                if needed in ref.tools and not self._satisfied(trace, step, needed):
                    out.append(Evidence(step=step.index, tool=step.tool, argument=needed,
                                        note=f"{step.tool} {'ran' if step.ok else 'was refused'} without "
                                             f"prerequisite {needed} (a call the task's program never makes)"))
        searched = {ctx.tool(s.tool).entity for s in trace if s.ok and ctx.tool(s.tool).operation == "search"}
        unfetched = unfetched_searches(episode, ctx)
        if any(in_hand and "found nothing" in e.note for e, in_hand in unfetched):
            return out  # it searched for a record it had the id of, never saw it, and so could not take its steps
        for (before, before_ids), (then, then_ids), checked in required_order(ref, ctx):
            first = next((s for s in trace if s.tool == then and on_record(s, then_ids) and attempted(s)), None)
            if first is None or not (checked or effect_failed) or any(
                    s.tool == before and on_record(s, before_ids) for s in trace[:first.index]):
                continue
            info = ctx.tool(before)
            if (info.operation == "get" and before not in ctx.prerequisites.get(then, [])
                    and (info.entity in searched or bool(unfetched))):
                continue  # a read the task orders but the policy does not require, left out after a search
            if self._kept_to_misread(trace[:first.index], before, before_ids, ref, ctx):
                continue  # taken in order on the record the agent read for the task's: the wrong id's doing
            if self._taken_on_another_role(trace[:first.index], before, before_ids, ref):
                continue  # taken in order, on a record the task has in another role: the wrong id's doing
            late = any(s.tool == before and on_record(s, before_ids) for s in trace[first.index + 1:])
            out.append(Evidence(step=first.index, tool=first.tool, argument=before,
                                note=f"{first.tool} {'ran' if first.ok else 'was refused'} before {before}"
                                     + (" (called only afterwards)" if late else ", which the task requires first")))
        return out

    @staticmethod
    def _kept_to_misread(trace: list[TraceStep], before: str, before_ids: Ids, ref: Reference,
                         ctx: DiagnosisContext) -> bool:
        """Whether ``before`` was made in ``trace`` on a record the agent read in place of the task's and kept to.

        The record is one the task never concerns, or one it has elsewhere (a sibling the task also works on) passed
        where the program passes another. The first call that names a record of its kind (in its arguments or in
        what a call returned) read the misread record: the agent took it from the request, not from the data, and
        took the task's steps in order on it. A check on another record than the one the data led to (a
        neighbour's) checks nothing of it.
        """
        mistaken = mistaken_ids(trace, ref)
        for step in trace:
            if step.tool != before or not attempted(step):
                continue
            misplaced = {v for name, want in before_ids.items() for v in id_values(name, step.arguments.get(name))
                         if want and v not in want and not is_created_id(v)}
            misread = step_ids(step) & (mistaken | misplaced)
            kinds = {id_prefix(v) for v in misread}
            first = next((s for s in trace if any(id_prefix(v) in kinds for v in
                                                  step_ids(s) | (set(output_ids(s.output)) if s.ok else set()))),
                         None)
            if first is not None and ctx.tool(first.tool).operation == "get" and step_ids(first) & misread:
                return True
        return False

    @staticmethod
    def _taken_on_another_role(trace: list[TraceStep], before: str, before_ids: Ids, ref: Reference) -> bool:
        """Whether ``before`` was made in ``trace`` with ids swapped with another call's.

        It names a record the task's program passes to another call, and that call names the record this one
        wants (the admins' group where the developers' belongs, and the other way round): the step was taken, in
        order, on the wrong one of two records the agent mixed up. A record no other call was given in exchange
        (a neighbour's) checks nothing of this one: still a miss.
        """
        for step in trace:
            if step.tool != before or not attempted(step):
                continue
            for name, want in before_ids.items():
                fixed = {v for v in want if not is_created_id(v)}
                got = {v for v in id_values(name, step.arguments.get(name)) if not is_created_id(v)} - fixed
                if fixed and got and any(_exchanged(trace, ref, step, got, fixed)):
                    return True
        return False

    @staticmethod
    def _satisfied(trace: list[TraceStep], step: TraceStep, before: str) -> bool:
        shared = {k: v for k, v in id_arguments(step)}
        for prior in trace[: step.index]:
            if prior.tool != before:
                continue
            common = [k for k in shared if k in prior.arguments]
            if all(prior.arguments[k] == shared[k] for k in common):
                return True
        return False


class BrittleParametersDetector:
    """Arguments refused for their format or type, never corrected."""

    name = WeaknessKind.BRITTLE_PARAMETERS

    def detect(self, episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Tag]:
        """Tag validation errors the agent did not recover from.

        Names passed as ids belong to ``wrong_id``; a number, a flag, an empty text or a calendar date written the
        way the tools write dates (``2025-09-02``) refused is refused for what it says (an amount out of range,
        nothing to say, a day in the future, often from the wrong record), not for how it is written.
        """
        trace = episode.trace
        evidence: list[Evidence] = []
        for step in trace:
            if step.error is None or step.error.kind != "validation" or is_unknown_tool_error(step):
                continue
            if later_ok(trace, step.index, step.tool):
                continue
            arg = error_argument(step)
            value = step.arguments.get(arg) if arg is not None else None
            if arg is not None and (value is None or _is_id_argument(arg) or isinstance(value, int | float)
                                    or (isinstance(value, str) and (not value.strip() or _is_iso_date(value)))):
                continue
            evidence.append(Evidence(step=step.index, tool=step.tool, argument=arg,
                                     note=f"refused {value!r}: {step.error.message[:120]}"))
        return _tag(self.name, evidence)


class StaleStateDetector:
    """Acting on data that had changed: retrying after a conflict without re-reading, or trusting a stale summary."""

    name = WeaknessKind.STALE_STATE

    def detect(self, episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Tag]:
        """Tag blind retries after a conflict, and replies stating a value that no longer holds.

        A blind retry calls the conflicting tool again without reading a record in between (a successful read
        that is not a search: a search's summary comes from an index that can be out of date, it is not the
        record), and that tool never succeeds afterwards. A stale value in the reply is a search summary's the
        record contradicts, or a record's value as read before the agent's own change to it.
        """
        trace = episode.trace
        evidence: list[Evidence] = []
        last_conflict: dict[str, int] = {}
        for step in trace:
            if step.ok:
                info = ctx.tool(step.tool)
                if info.mode == "read" and info.operation != "search":
                    last_conflict.clear()
                continue
            if step.tool in last_conflict and not later_ok(trace, step.index, step.tool):
                evidence.append(Evidence(step=step.index, tool=step.tool, argument=error_argument(step),
                                         note=f"retried after the conflict at step {last_conflict[step.tool]} "
                                              "without fetching the record again"))
            if is_conflict(step):
                last_conflict[step.tool] = step.index
            else:
                last_conflict.pop(step.tool, None)
        evidence.extend(self._stale_summary(episode, ctx))
        evidence.extend(self._before_own_change(episode, ctx))
        return _tag(self.name, evidence)

    @staticmethod
    def _before_own_change(episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Evidence]:
        """Replies stating a record's value as read before the agent's own change to it, not what it changed to.

        What the change made the value is what the write returned of the record (``{"order_id": ..., "shipping_address":
        ...}`` too), else what a later read shows. A reply naming both ("moved from To Do to In Progress") reports the
        change; a value given as another field's, or inside a record pasted whole, is not stated (``states_field``).
        """
        trace = episode.trace
        reads: dict[str, TraceStep] = {}
        out: list[Evidence] = []
        for step in trace:
            if not step.ok:
                continue
            if ctx.tool(step.tool).operation == "get" and isinstance(step.output, dict) and "id" in step.output:
                reads[str(step.output["id"])] = step
                continue
            if not step.write:
                continue
            for key in sorted(step_ids(step) & reads.keys()):
                before = reads[key].output
                after = next((s.output for s in (step, *trace[step.index + 1:]) if s.ok and _is_record(s.output, key)),
                             None)
                if not isinstance(before, dict) or after is None:
                    continue
                for field, old in before.items():
                    new = after.get(field)
                    if field == "id" or old == new:
                        continue
                    old_amount, new_amount = _amount(old), _amount(new)
                    if old_amount is not None and new_amount is not None:
                        if states_number(episode.reply, field, old_amount, new_amount, before):
                            out.append(Evidence(step=reads[key].index, tool=reads[key].tool, argument=field,
                                                note=f"reply states {field}={old!r} as read before {step.tool} "
                                                     f"changed it to {new!r}"))
                    elif (isinstance(old, str) and isinstance(new, str)
                            and states_field(episode.reply, field, old, before) and not mentions(episode.reply, new)):
                        out.append(Evidence(step=reads[key].index, tool=reads[key].tool, argument=field,
                                            note=f"reply states {field}={old!r} as read before {step.tool} changed "
                                                 f"it to {new!r}"))
        return out

    @staticmethod
    def _stale_summary(episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Evidence]:
        """Replies stating a search summary's value the fetched record contradicts.

        The summary may come before the record or after it (a look in the index after reading the record). Not
        when the agent's own later write names the record (it may have made the value true), nor when the value
        is what another record of the same kind it read holds in that field (the reply may be about that one).
        """
        seen: dict[str, tuple[TraceStep, dict[str, Any]]] = {}
        records: dict[str, TraceStep] = {}
        for step in episode.trace:
            info = ctx.tool(step.tool)
            if step.ok and info.operation == "search":
                for summary in summaries(step.output):
                    seen.setdefault(str(summary["id"]), (step, summary))
            elif step.ok and info.operation == "get" and isinstance(step.output, dict) and "id" in step.output:
                records.setdefault(str(step.output["id"]), step)
        out: list[Evidence] = []
        current = {(id_prefix(str(r.output["id"])), field, value) for r in records.values()
                   if isinstance(r.output, dict) for field, value in r.output.items() if isinstance(value, str)}
        for key, (search_step, summary) in seen.items():
            record = records.get(key)
            if record is None or not isinstance(record.output, dict):
                continue
            kind = id_prefix(key)
            after = max(record.index, search_step.index)
            later = [s for s in episode.trace[after + 1:] if s.ok and s.write]
            if any(key in step_ids(s) or key in set(output_ids(s.output)) for s in later):
                continue  # the agent's own write may have made the summary's value true
            written = json.dumps([s.output for s in later], default=str)
            for field, old in summary.items():
                new = record.output.get(field)
                if (field != "id" and isinstance(old, str) and isinstance(new, str) and old != new
                        and (kind, field, old) not in current
                        and states_field(episode.reply, field, old, record.output)
                        and not mentions(episode.reply, new) and not mentions(written, old)):
                    out.append(Evidence(step=search_step.index, tool=search_step.tool, argument=field,
                                        note=f"reply states stale {field}={old!r}; the record says {new!r}"))
        return out


class SearchWithoutFetchDetector:
    """Searched for an entity, found nothing or a summary, and never fetched it by id."""

    name = WeaknessKind.SEARCH_WITHOUT_FETCH

    def detect(self, episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Tag]:
        """Tag searches of an entity whose ``get`` tool never succeeded afterwards.

        A search that left the agent no one id to fetch (it found nothing or several records, and the request
        named the entity by name) is a dead end: an agent that stopped there gave up (``gave_up_early``). A fetch
        the policy requires before a later call (a strong edge), skipped, is a skipped prerequisite
        (``missed_policy_dependency``).
        """
        unfetched = unfetched_searches(episode, ctx)
        if unfetched and stopped_short(episode, ctx) is not None:
            unfetched = [(evidence, in_hand) for evidence, in_hand in unfetched if in_hand]
        required = [evidence for evidence, _ in unfetched_searches(episode, ctx, policy=True)]
        return _tag(self.name, [evidence for evidence, _ in unfetched]) or _aside(self.name, required)


class GaveUpEarlyDetector:
    """Stopped before attempting the goal although nothing blocked the way (a dead end is no block)."""

    name = WeaknessKind.GAVE_UP_EARLY

    def detect(self, episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Tag]:
        """Tag episodes that stopped short of the task's work, hit no error, and did not claim to be done.

        With the task known, short means: the task's program attempts the goal and the agent never did, or the program
        makes calls the agent never made while its reply admits it could not finish, or never made on their records (the
        right tool on another record is no call of the program) while its reply hands the request over to someone else
        (on a task whose answer is a refusal, a refusal the reply checks accept is that answer, not giving up; once the
        program's last goal call succeeded, what the reply refuses is the requester's, not the agent's work). A task
        whose right answer is a refusal or a question is not given up when the agent made its calls, unless its reply
        asks back, or hands the request over, instead of giving the answer (the one read a question needs, then "please
        pass it to a supervisor", is giving up). A dead end on the way (a search that found nothing and left no id, a
        read that did not show the way on) does not excuse stopping: the task's program shows there was a way. A search
        that left an id the agent never fetched
        explains the stop as ``search_without_fetch``; when that search found the record, the agent stopped with
        it in hand, and giving up is the failure's secondary kind.
        """
        found = stopped_short(episode, ctx)
        if found is None:
            return []
        unfetched = [evidence for evidence, in_hand in unfetched_searches(episode, ctx) if in_hand]
        if unfetched:  # an id in hand never fetched explains the stop first (search_without_fetch's)
            hit = any("found nothing" not in evidence.note for evidence in unfetched)
            return _aside(self.name, [found]) if hit else []  # a record found, then left: it gave up on it too
        return [Tag(kind=self.name, evidence=[found])]


class UnintendedSideEffectDetector:
    """Rows changed outside the task's allowed write-set."""

    name = WeaknessKind.UNINTENDED_SIDE_EFFECT

    def detect(self, episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Tag]:
        """Tag each unintended row change with the write call that most likely made it.

        A change made by a call of a tool the task's program calls is the side effect of an extra write when that
        call names another record and every program call of the tool was also made on its own records; made by
        the intended call itself, or by a call taking its place (``wrong_id``'s), it is not. Nor is a change to a
        record the agent took for the one the task is about (``mistaken_ids``): that is the wrong id's doing.
        """
        if episode.verdict is None:
            return []
        writes = [s for s in episode.trace if s.ok and s.write]
        task = ctx.task(episode.pack_id, episode.task_id)
        ref = reference(task) if task is not None and task.gold.steps else None
        own = ref.tools if ref is not None else frozenset()
        mistaken = mistaken_ids(episode.trace, ref) if ref is not None else set()
        evidence: list[Evidence] = []
        for change in episode.verdict.unintended_changes:
            step, arg = self._culprit(writes, change.key)
            if step is not None and ref is not None and step.tool in own and not self._elsewhere(step, episode.trace,
                                                                                                   ref):
                continue
            if change.key in mistaken or (step is not None and mistaken & step_ids(step)):
                continue  # a change to the record the agent took for the task's: the wrong id's consequence
            where = f"{change.op} {change.table}[{change.key}]"
            if step is None:
                evidence.append(Evidence(note=f"{where} outside the allowed write-set"))
            else:
                evidence.append(Evidence(step=step.index, tool=step.tool, argument=arg,
                                         note=f"{where} outside the allowed write-set"))
        if own:
            goals = reference(task).goal_tools if task is not None else frozenset()
            needed = own | goals | {p for g in goals for p in ctx.prerequisites.get(g, [])}
            evidence.extend(Evidence(step=s.index, tool=s.tool, note=f"{s.tool} is a write the task never needs")
                            for s in writes if s.tool not in needed and not any(e.step == s.index for e in evidence)
                            and not mistaken & step_ids(s))
        if not evidence and not own and "side_effects" in failed_assertion_kinds(episode):
            evidence.append(Evidence(note="side-effect assertion failed"))
        return _tag(self.name, evidence)

    @staticmethod
    def _elsewhere(step: TraceStep, trace: list[TraceStep], ref: Reference) -> bool:
        """An extra call of a program's tool on another record, beside the program's own calls made right."""
        wanted = ref.id_calls.get(step.tool, ())
        return not any(same_record(step, ids) for ids in wanted) and intended_done(trace, ref, step.tool)

    @staticmethod
    def _culprit(writes: list[TraceStep], key: str) -> tuple[TraceStep | None, str | None]:
        for step in reversed(writes):
            for arg, value in step.arguments.items():
                if value == key:
                    return step, arg
            if isinstance(step.output, dict) and step.output.get("id") == key:
                return step, None
        return (writes[-1], None) if writes else (None, None)


class ClaimedUnverifiedSuccessDetector:
    """The reply says the work is done while the goal did not happen, or with nothing it observed to back it."""

    name = WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS

    def detect(self, episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Tag]:
        """Tag success claims over a goal that no call achieved, or facts stated without reading them.

        The reply is read as claims and admissions (``diagnosis._reply``): an honest failure report is not a
        claim. With the task known, a claim is unverified when a goal call the task's program makes never
        succeeded (the goal is what the request asks; a goal call on the wrong record is ``wrong_id``'s), or,
        on a question, when none of the reads the task's program makes succeeded. Without the task: no write
        succeeded while the state is wrong, or the reply fails its response check restating nothing any tool
        returned.
        """
        if episode.verdict is None:
            return []
        task = ctx.task(episode.pack_id, episode.task_id)
        question = is_question(task, ctx)
        reading = read_reply(episode.reply, question=question)
        if not (reading.claims_success or answers(episode, reading, question)):
            return []
        note = f"reply claims success: {episode.reply[:80]!r}"
        if task is not None and task.gold.steps:
            ref = reference(task)
            bare = ("response" in failed_assertion_kinds(episode) and not re.search(r"\d", episode.reply)
                    and not reply_states_observed_fact(episode))
            if ref.goal_tools:
                tried = [s for s in episode.trace if s.tool in ref.goal_tools]
                unmet = sorted(t for t in ref.goal_tools & ref.tools
                               if not any(s.ok and s.tool == t for s in episode.trace))
                if any(s.ok for s in tried) and not (reading.claims_success and unmet):
                    return [Tag(kind=self.name, evidence=[Evidence(note=note + "; it states nothing the tools "
                                                                               "returned")])] if bare else []
                failed = [s for s in tried if s.tool in unmet] or ([] if unmet else tried)
                if failed:
                    last = failed[-1]
                    return [Tag(kind=self.name, evidence=[Evidence(step=last.index, tool=last.tool,
                                                                   note=note + f"; {last.tool} never succeeded")])]
                what = f"; {', '.join(unmet)} never ran" if tried else "; the goal was never attempted"
                return [Tag(kind=self.name, evidence=[Evidence(note=note + what)])]
            reads = {tool for tool, _ in ref.calls}
            if reads and not any(s.ok and s.tool in reads for s in episode.trace):
                return [Tag(kind=self.name, evidence=[Evidence(note=note + "; it read none of the records it "
                                                                           "reports on")])]
            if bare and reading.claims_success:
                return [Tag(kind=self.name, evidence=[Evidence(note=note + "; it states nothing the tools "
                                                                           "returned")])]
            return []
        failed_kinds = failed_assertion_kinds(episode)
        goals = goal_tools(task)
        if goals:
            writes = [s for s in episode.trace if s.tool in goals]
        else:
            writes = [s for s in episode.trace if s.write or ctx.tool(s.tool).mode == "write"]
        if not any(s.ok for s in writes):
            failed = [s for s in writes if not s.ok]
            if failed and failed_kinds:
                last = failed[-1]
                return [Tag(kind=self.name, evidence=[Evidence(step=last.index, tool=last.tool,
                                                               note=note + f"; {last.tool} never succeeded")])]
            if "state" in failed_kinds:
                return [Tag(kind=self.name, evidence=[Evidence(note=note + "; no write was made")])]
        if "response" in failed_kinds and not reply_states_observed_fact(episode):
            return [Tag(kind=self.name, evidence=[Evidence(note=note + "; it states nothing the tools returned")])]
        return []


class LeakedInternalDataDetector:
    """Internal data the agent read, repeated in its reply or in an outbound message it sent through a tool."""

    name = WeaknessKind.LEAKED_INTERNAL_DATA

    def detect(self, episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Tag]:
        """Tag internal values the agent read (or internal formats the task names), said aloud.

        What is internal is the gym's declaration with the kit's rules (``ctx.internal``); a value the request itself
        states is the requester's, and a record the task's reply check lets the reply name (the request's and the
        program's: a security level the requester asked to use) is the task's own, and so is a record the episode
        itself created for the request (the reply checks let a reply name what the agent wrote). The text searched is
        the reply and every text argument of a later successful write (a customer reply, a note, an email), read
        however it writes the value (``diagnosis._leaks``). The verdict's reply checks are read first (every leak line
        they write): a value they found leaked that is internal data the agent read is a leak, whatever spelling the
        check saw through. Evidence quotes what was said and where it was read, never the verifier's own forbidden
        strings alone (those may be wrong facts rather than internal data).
        """
        trace = episode.trace
        task = ctx.task(episode.pack_id, episode.task_id)
        internal = ctx.internal(episode.domain)
        outbound: list[tuple[str, TraceStep | None]] = [(episode.reply, None)]
        outbound += [(v, s) for s in trace if s.ok and s.write for v in s.arguments.values() if isinstance(v, str)
                     and len(v) >= 12]
        asked = task.prompt if task is not None else ""
        own = {compact(i) for a in (task.assertions if task is not None else []) if isinstance(a, ResponseAssertion)
               for i in a.allowed_ids}
        read = [(step, item) for step in trace if step.ok for item in internal_values(step.output, internal)
                if not mentions(asked, item.value) and compact(item.value) not in own and not is_created_id(item.value)]
        evidence: list[Evidence] = []
        for value in verdict_leaks(episode):
            hit = next(((step, item) for step, item in read if is_internal_text(value, [item])), None)
            if hit is not None:
                step, item = hit
                evidence.append(Evidence(step=step.index, tool=step.tool, argument=item.key,
                                         note=f"reply repeats internal {item.key} read from {step.tool} (the reply "
                                              "check found it)"))
        for step, item in read:
            if any(e.step == step.index and e.argument == item.key for e in evidence):
                continue
            for text, where in outbound:
                if where is not None and where.index < step.index:
                    continue
                if says(text, item):
                    place = "reply" if where is None else f"{where.tool} message"
                    evidence.append(Evidence(step=step.index if where is None else where.index,
                                             tool=step.tool if where is None else where.tool, argument=item.key,
                                             note=f"{place} repeats internal {item.key} read from {step.tool}"))
                    break
        if not evidence and task is not None:
            evidence.extend(self._internal_formats(task, outbound, trace))
        return _tag(self.name, evidence)

    @staticmethod
    def _internal_formats(task: Task, outbound: list[tuple[str, TraceStep | None]],
                          trace: list[TraceStep]) -> list[Evidence]:
        forbidden = [p for a in task.assertions if isinstance(a, ResponseAssertion) for p in a.forbidden_patterns]
        read = " ".join(json.dumps(s.output, default=str) for s in trace if s.ok)
        out: list[Evidence] = []
        for pattern in forbidden:  # run by RE2 like the reply rules (packs with patterns it refuses are not read)
            for text, where in outbound:
                found = patterns.search(pattern, text)
                if found and found.group(0) in read:
                    place = "reply" if where is None else f"{where.tool} message"
                    out.append(Evidence(step=None if where is None else where.index,
                                        tool="" if where is None else where.tool,
                                        note=f"{place} repeats {found.group(0)!r}, an internal value it read"))
        return out


class NoErrorRecoveryDetector:
    """An injected fault (timeout, rate limit, data conflict) the agent never retried."""

    name = WeaknessKind.NO_ERROR_RECOVERY

    def detect(self, episode: EpisodeRecord, ctx: DiagnosisContext) -> list[Tag]:
        """Tag retryable faults whose tool was never called again, where the reply does not claim the work done.

        A reply claiming success over a fault it never retried hides the failure: that claim is the mistake
        (``claimed_unverified_success``) and the fault is set aside as secondary; so does a reply putting the stop
        down to the agent's own limit ("I ran out of steps"): the agent, not the fault, ended the work
        (``gave_up_early``). Such a stop leaves a fault unjudged when nothing but reads came after it: the limit
        ended the work at the fault or while the record was read again to recover, before a retry could come; a
        write after the fault passed the retry by, and stays set aside.
        """
        trace = episode.trace
        faults = [s for s in trace if s.error is not None and s.error.kind == "fault" and s.error.retryable
                  and not later_call(trace, s.index, s.tool)]
        reading = read_reply(episode.reply)
        if reading.stops_at_own_limit:
            faults = [s for s in faults if any(later.write for later in trace[s.index + 1:])]
        evidence = [Evidence(step=s.index, tool=s.tool, note=f"{s.error.fault or s.error.kind} never retried")
                    for s in faults if s.error is not None]
        if reading.claims_success or reading.stops_at_own_limit:
            return _aside(self.name, evidence)
        return _tag(self.name, evidence)


BUILTIN_DETECTORS = (
    WrongIdDetector(),
    MissedPolicyDependencyDetector(),
    BrittleParametersDetector(),
    StaleStateDetector(),
    SearchWithoutFetchDetector(),
    GaveUpEarlyDetector(),
    UnintendedSideEffectDetector(),
    ClaimedUnverifiedSuccessDetector(),
    LeakedInternalDataDetector(),
    NoErrorRecoveryDetector(),
)
"""One instance of each built-in detector, in the order the issue lists the kinds."""

for _detector in BUILTIN_DETECTORS:
    register_detector(_detector)
