"""The authoring kit: make_domain's contract, fault injection, knob parsing and gold programs from the expert."""

from __future__ import annotations

import dataclasses

import pytest
from toy_domain import TEMPLATES, TOY, ToyKnobs, build_world

from arena.authoring import Fault, GymKnobs, Template, fault_id, inject, make_domain, parse_knobs, step
from arena.checks.conformance import check_pack
from arena.core.pack import build_pack
from arena.core.task import Persona

AGENT = Persona(name="Ada", role="agent", permissions=["refund"])


def _toy(**changes: object) -> dict[str, object]:
    args: dict[str, object] = {
        "name": "toy2", "description": "d", "tools": TOY.tools, "policy": "p", "dependencies": [],
        "world": build_world, "templates": [], "knobs": ToyKnobs, "clock_start": "2025-06-15T09:00:00",
        "persona": AGENT, "cannot": dict(TOY.cannot),
    }
    return {**args, **changes}


def test_make_domain_wants_every_vocabulary_knob_honoured_or_refused() -> None:
    cannot = {k: v for k, v in TOY.cannot.items() if k != "stale_rate"}
    with pytest.raises(ValueError, match=r"neither honours nor refuses vocabulary knob\(s\) \['stale_rate'\]"):
        make_domain(**_toy(cannot=cannot))
    with pytest.raises(ValueError, match=r"both honours and refuses knob\(s\) \['fault_rate'\]"):
        make_domain(**_toy(cannot={**TOY.cannot, "fault_rate": "no"}))


def test_make_domain_refuses_repeated_template_names() -> None:
    template = Template("same", "information_retrieval", (), lambda w, rng, n: [])
    with pytest.raises(ValueError, match=r"template names repeat: \['same'\]"):
        make_domain(**_toy(templates=[template, template]))


def test_the_toy_gold_program_is_the_experts_and_passes_conformance() -> None:
    pack = build_pack(TOY, seed=0, knobs={"orders": 60, "tasks_per_template": 2})
    plain = pack.task("refund_plain-02")
    assert [s.tool for s in plain.gold.steps] == ["get_order", "check_refund", "refund_order"]
    assert plain.gold.steps[2].arguments == {"order_id": "ORD-00006", "amount": 5.0}
    conflict = pack.task("refund_conflict-01")
    assert [s.tool for s in conflict.gold.steps] == ["get_order", "check_refund", "refund_order", "get_order",
                                                     "refund_order"]
    assert conflict.faults == ["refund_conflict-01.data_conflict"]
    report = check_pack(pack)  # the toy's crash tool lets adversaries crash episodes: only the gyms' own checks
    assert report.tasks == 6 and not [f for f in report.failures if not f.check.startswith("adversary:")]
    assert {r.check for r in report.results} >= {"gold_passes", "null_fails"}


def test_inject_retries_and_refetches_the_record_the_failing_call_works_on() -> None:
    steps = [step("get_order", order_id="A"), step("get_customer", customer_id="C"),
             step("update_order", order_id="A", note="x")]
    timed, spec = inject(steps, Fault("timeout", "update_order"), "t-01.timeout")
    assert [s.tool for s in timed] == ["get_order", "get_customer", "update_order", "update_order"]
    assert spec.on_call == 1 and spec.retry_after is None
    conflicted, _ = inject(steps, Fault("data_conflict", "update_order"), "t-01.data_conflict")
    assert conflicted[3] == steps[0] and conflicted[4] == steps[2]
    limited, spec = inject(steps, Fault("rate_limit", "get_customer"), "t-01.rate_limit")
    assert spec.retry_after == 2.0 and [s.tool for s in limited][1:3] == ["get_customer", "get_customer"]
    with pytest.raises(ValueError, match="never calls 'cancel_order'"):
        inject(steps, Fault("timeout", "cancel_order"), "t-01.timeout")
    with pytest.raises(ValueError, match="no get_ step"):
        inject(steps[1:], Fault("data_conflict", "get_customer"), "t-01.data_conflict")


def test_fault_ids_are_unique_within_a_task() -> None:
    assert fault_id("t-01", "timeout") == "t-01.timeout"
    assert fault_id("t-01", "timeout", ["t-01.timeout", "t-01.timeout-2"]) == "t-01.timeout-3"


@pytest.mark.parametrize(("knobs", "needle"), [
    ({"bogus": 1}, r"unknown toy knob\(s\) \['bogus'\]"),
    ({"fault_rate": 2}, "toy knob fault_rate=2"),
    ({"focus_tags": ["shiny"]}, r"unknown tag\(s\) \['shiny'\]"),
    ({"prerequisite_depth": 0}, "toy knob prerequisite_depth=0"),
])
def test_bad_knobs_name_the_knob_and_the_value(knobs: dict[str, object], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        parse_knobs(ToyKnobs, knobs, "toy")


def test_a_gym_subclass_changes_a_default_and_the_docs_follow() -> None:
    assert parse_knobs(ToyKnobs, {}, "toy").tasks_per_template == 1
    assert parse_knobs(GymKnobs, {}, "x").tasks_per_template == 2
    assert "ORD-00005" in TOY.knobs["tasks_per_template"]


def test_a_domain_copy_keeps_generating() -> None:
    copy = dataclasses.replace(TOY, description="another")
    ids = [t.id for t in TOY.generate(0, {"orders": 20}).tasks]
    assert [t.id for t in copy.generate(0, {"orders": 20}).tasks] == ids


def _with_depths(build):
    """The template's drafts, declaring chains of 1, 2, 3... steps."""
    def chained(world, rng, n):
        drafts = build(world, rng, n)
        for i, draft in enumerate(drafts):
            draft.depth = i + 1
        return drafts

    return chained


def test_prerequisite_depth_keeps_the_drafts_whose_chain_it_allows() -> None:
    chained = [dataclasses.replace(t, name=f"chain_{t.name}", depth=3, build=_with_depths(t.build)) for t in TEMPLATES]
    cannot = {k: v for k, v in TOY.cannot.items() if k != "prerequisite_depth"}
    domain = make_domain(**_toy(templates=chained, cannot=cannot))
    assert "prerequisite_depth" in domain.knobs
    ids = {t.id for t in domain.generate(0, {"orders": 20, "tasks_per_template": 3, "prerequisite_depth": 2}).tasks}
    assert ids == {f"chain_{t.name}-0{i}" for t in TEMPLATES for i in (1, 2)}
    assert len(domain.generate(0, {"orders": 20, "tasks_per_template": 3}).tasks) == 9
    shallow = make_domain(**_toy(templates=[dataclasses.replace(t, depth=2) for t in TEMPLATES], cannot=cannot))
    with pytest.raises(ValueError, match="prerequisite_depth=1 selects no toy2 task"):
        shallow.generate(0, {"orders": 20, "prerequisite_depth": 1})
