"""The conformance checker: what every gym and every task must satisfy.

For each task: the gold program passes; a null agent (no calls, empty reply)
fails; two seeded replays give identical traces, final hashes and verdicts;
the episode starts from the template world whatever ran before; every kind
of bad call leaves the world unchanged; and no adversarial agent of
``arena.checks.adversarial`` (null, claim success, dump everything, paste the
records, random writes, injection) passes. Beyond the gold program, what a round needs: the careful reference
policy passes the task, finds its records by fields their searches show and makes no policy-required step the gold
program skips (``arena.checks.careful``); and every tool parameter is typed and documented
(``arena.checks.tool_docs``). A pack that passes every check is one a round can train on.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from arena.checks.adversarial import audit_task
from arena.checks.careful import careful_checks, strong_graph
from arena.checks.results import CheckResult, ConformanceReport
from arena.checks.tool_docs import tool_checks
from arena.core.domain import Domain
from arena.core.gym import Gym
from arena.core.pack import Pack
from arena.core.results import ErrorKind, TraceStep, Verdict
from arena.core.task import Task

__all__ = ["CheckResult", "ConformanceReport", "check_pack", "check_task", "run_gold"]


def run_gold(gym: Gym, task: Task, *, seed: int = 0) -> Verdict:
    """Play a task's gold program on a fresh world and return the verdict.

    A conversation of given user turns is played turn by turn: each message, the gold steps of that turn
    (``GoldStep.turn``), the gold reply; then the conversation ends as every given turn was answered.
    """
    gym.reset(task.id, seed=seed)
    conversation = task.conversation
    if conversation is None or conversation.user.kind != "given":
        for step in task.gold.steps:
            gym.call_tool(step.tool, step.arguments)
        return gym.verify(task.gold.reply)
    for turn, given in enumerate(conversation.user.turns):
        gym.record_turn("user", given.text)
        for step in task.gold.steps:
            if (step.turn or 0) == turn:
                gym.call_tool(step.tool, step.arguments)
        gym.record_turn("agent", task.gold.reply)
    gym.end_conversation("given_turns_done")
    return gym.verify(task.gold.reply)


def _bad_calls(gym: Gym, task: Task) -> list[tuple[str, str, Any, set[ErrorKind] | None]]:
    """Bad calls of every kind: (check name, tool, arguments, acceptable error kinds or None for any outcome)."""
    specs = {s.name: s for s in gym.pack.tools}
    reads = [s for s in task.gold.steps if specs[s.tool].mode == "read"]
    if reads:
        target, good = reads[0].tool, dict(reads[0].arguments)
    else:
        target, good = next(n for n in sorted(specs) if specs[n].mode == "read"), {}
    params = specs[target].parameters.get("properties", {})
    required = specs[target].parameters.get("required", [])
    first = required[0] if required else next(iter(params), "x")
    invalid: set[ErrorKind] = {"validation"}
    cases: list[tuple[str, str, Any, set[ErrorKind] | None]] = [
        ("unknown_tool", "__no_such_tool__", {}, invalid),
        ("malformed_json", target, '{"unterminated": ', invalid),
        ("not_an_object", target, "[1, 2, 3]", invalid),
        ("wrong_type", target, {**good, first: {"wrong": 12345} if _is_array(params.get(first)) else [12345]},
         invalid),
        ("nan", target, '{"' + first + '": NaN}', invalid),
        ("infinity", target, '{"' + first + '": Infinity}', invalid),
        ("huge_string", target, {**good, first: "x" * 1_000_000}, invalid),
        ("lone_surrogate", target, {**good, first: "bad\ud800surrogate"}, invalid),
        ("unexpected_argument", target, {**good, "__unexpected__": 1}, invalid),
    ]
    if required:
        cases.append(("missing_argument", target, {k: v for k, v in good.items() if k != first}, invalid))
    if params.get(first, {}).get("type") == "string":
        for i, text in enumerate(("'; DROP TABLE customers; --", "😀\u202eevil\u200f", "1 OR 1=1")):
            cases.append((f"hostile_text_{i}", target, {**good, first: text}, None))
    denied = next((s for s in gym.pack.tools if s.permission and s.permission not in task.persona.permissions), None)
    if denied is not None:
        cases.append(("permission_denied", denied.name, {}, {"permission"}))
    return cases


def _is_array(schema: Any) -> bool:
    """Whether a parameter's schema takes a list (so a list is no wrong type for it)."""
    if not isinstance(schema, dict):
        return False
    return schema.get("type") == "array" or any(_is_array(s) for s in schema.get("anyOf", []))


def _same_trace(a: list[TraceStep], b: list[TraceStep]) -> bool:
    return [s.model_dump() for s in a] == [s.model_dump() for s in b]


def check_task(gym: Gym, task: Task, template_hash: str, strong: nx.DiGraph[str] | None = None) -> list[CheckResult]:
    """Run every per-task check of the conformance suite.

    Args:
        gym: A gym holding the task's pack.
        task: The task.
        template_hash: The logical hash of the pack's starting world.
        strong: The STRONG edges of the pack's dependency graph (read from the pack when omitted).
    """
    results: list[CheckResult] = []

    def add(check: str, ok: bool, detail: str = "") -> None:
        waived = None if ok or gym.domain.not_applicable is None else gym.domain.not_applicable(task, check)
        if waived is not None:
            results.append(CheckResult(task_id=task.id, check=check, passed=True, waived=waived))
            return
        results.append(CheckResult(task_id=task.id, check=check, passed=ok, detail="" if ok else detail))

    gym.reset(task.id, seed=0)
    add("isolated_start", gym.state_hash() == template_hash and gym.changed_rows() == 0,
        "episode did not start from the template world")
    verdict = run_gold(gym, task, seed=0)
    failed = [r.description + ": " + r.detail for r in verdict.results if not r.passed]
    add("gold_passes", verdict.passed, "; ".join(failed))
    trace_a, hash_a = list(gym.trace), gym.state_hash()
    verdict_b = run_gold(gym, task, seed=0)
    same = _same_trace(trace_a, gym.trace) and hash_a == gym.state_hash() and verdict == verdict_b
    add("replay_deterministic", same, "two replays with seed 0 differ")
    gym.reset(task.id, seed=1)
    add("isolated_start_after_episode", gym.state_hash() == template_hash,
        "world after reset differs from the template")
    null = gym.verify("")
    add("null_fails", not null.passed, "a null agent (no calls, empty reply) passes")
    gym.reset(task.id, seed=0)
    for check, name, args, acceptable in _bad_calls(gym, task):
        result = gym.call_tool(name, args)
        kind = result.error.kind if result.error else None
        unchanged = gym.changed_rows() == 0
        refused = acceptable is None or (not result.ok and kind in acceptable)
        label = f"{name}({str(args)[:40]!r})"
        add(f"bad_call:{check}", refused and unchanged,
            f"{label}: got ok={result.ok} kind={kind}, world unchanged={unchanged}")
    add("bad_calls_leave_world", gym.state_hash() == template_hash, "bad calls changed the world")
    gym.verify("")
    ended = gym.call_tool(task.gold.steps[0].tool if task.gold.steps else "__none__", {})
    add("bad_call:ended", not ended.ok and ended.error is not None and ended.error.kind == "ended",
        "a call after the episode ended was not refused")
    for audit in audit_task(gym, task):
        if audit.waived:  # the verdict cannot judge it: held, and the report says why
            results.append(CheckResult(task_id=task.id, check=f"adversary:{audit.adversary}", passed=True,
                                       waived=audit.waived))
            continue
        why = f"a tool crashed on its arguments: {audit.crash}" if audit.crash else f"passes (score {audit.score:.2f})"
        add(f"adversary:{audit.adversary}", audit.holds, f"the {audit.adversary} agent: {why}")
    for careful in careful_checks(gym, task, strong_graph(gym.pack.graph) if strong is None else strong):
        add(careful.check, careful.passed, careful.detail)
    return results


def check_pack(pack: Pack, *, task_ids: list[str] | None = None, domain: Domain | None = None) -> ConformanceReport:
    """Run the conformance suite over a pack's tasks.

    Args:
        pack: The pack to check.
        task_ids: Restrict to these tasks (default: all tasks, and the tools' parameters).
        domain: The domain implementing the pack's tools (looked up by name if omitted).
    """
    strong = strong_graph(pack.graph)
    with Gym(pack, domain) as gym:
        template_hash = gym.template_hash()
        report = ConformanceReport(pack_id=pack.id, domain=pack.manifest.domain, tasks=0)
        if task_ids is None:  # the tools are the pack's, checked with the whole pack
            report.results.extend(tool_checks(pack.tools))
        for task in pack.tasks:
            if task_ids is not None and task.id not in task_ids:
                continue
            report.tasks += 1
            report.results.extend(check_task(gym, task, template_hash, strong))
    return report
