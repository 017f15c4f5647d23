"""The curriculum bench's gap ceiling: decisions at the gap tools made perfect, and nothing else changed."""

from __future__ import annotations

from collections import Counter

from arena.agents.reference import CONTEXTS, PolicyParams, ReferencePolicy
from arena.core.episode import EpisodeRecord
from arena.core.pack import build_pack
from arena.rollout import EpisodeKey, RolloutConfig, run_episodes
from bench.curriculum_arms import perfect_at

DOMAIN = "procurement"


def _careful(params: PolicyParams, key: str, tool: str) -> float:
    """Probability mass the row at (key, tool) gives the expert's strategy, as a logit margin over the rest."""
    row = params.row(key, tool)
    best = max(PolicyParams.expert().logits[key], key=PolicyParams.expert().logits[key].__getitem__)
    return row[best] - max(v for s, v in row.items() if s != best)


def test_perfect_at_makes_only_the_named_tools_careful() -> None:
    every = [f"{kind}|{c}" for kind, contexts in CONTEXTS.items() for c in contexts]
    start = PolicyParams.initial(dict.fromkeys(every, 0.35), transfer=0.5)
    filled = perfect_at(start, {"create_po", "approve_po"})
    for key in every:
        assert _careful(filled, key, "create_po") > 20, key
        assert _careful(filled, key, "approve_po") > 20, key
        assert filled.row(key, "receive_goods") == start.row(key, "receive_goods"), key
        assert filled.row(key) == start.row(key), key
    assert start.offsets == {}, "the original parameters are left as they were"


def test_the_ceiling_changes_only_episodes_that_call_the_gap_tools() -> None:
    pack = build_pack(DOMAIN, seed=0)
    calls = {t.id: {s.tool for s in t.gold.steps} for t in pack.tasks}
    every = [f"{kind}|{c}" for kind, contexts in CONTEXTS.items() for c in contexts]
    start = PolicyParams.initial(dict.fromkeys(every, 0.35), transfer=0.0)
    keys = [EpisodeKey(pack.id, t.id, seed, 0) for t in pack.tasks for seed in range(3)]
    before = run_episodes(ReferencePolicy(start), [pack], keys, RolloutConfig())
    # the tool at which the starting policy makes the most decisions that name a tool
    counts = Counter(d["tool"] for r in before for d in r.decisions if d.get("tool"))
    gap = {max(counts, key=lambda tool: (counts[tool], tool))}
    after = run_episodes(ReferencePolicy(perfect_at(start, gap)), [pack], keys, RolloutConfig())
    def at_gap(record: EpisodeRecord) -> bool:
        return bool(calls[record.task_id] & gap) or any(d.get("tool") in gap for d in record.decisions)

    touched = [(b, a) for b, a in zip(before, after, strict=True) if at_gap(b)]
    untouched = [(b, a) for b, a in zip(before, after, strict=True) if not at_gap(b)]
    assert touched and untouched
    for b, a in untouched:
        assert [c.tool for c in b.trace] == [c.tool for c in a.trace], b.task_id
        assert b.passed == a.passed, b.task_id
    assert sum(a.passed for _, a in touched) > sum(b.passed for b, _ in touched)
