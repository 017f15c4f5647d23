"""Every weakness kind's knobs are honoured by every gym or refused with a reason, and honoured knobs act."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from toy_domain import TOY

from arena.authoring import VOCABULARY, WEAKNESS_KNOBS, kind_refusal, knob_refusal, targetable_kinds
from arena.core.domain import Domain, World
from arena.core.domains import BUILTIN_DOMAINS, get_domain
from diagnosis.knobs import KIND_TARGETS
from factory_client import LocalFactory, VariantRequest, WeaknessTarget, targetable
from factory_client.errors import FactoryError

GYMS = [*BUILTIN_DOMAINS, "toy"]

CHANGED_BY: dict[str, dict[str, Any]] = {
    "tasks_per_template": {"tasks_per_template": 3},
    "focus_tags": {"focus_tags": ["fault_timeout"]},
    "heldout_fraction": {"heldout_fraction": 0.1},
    "fault_rate": {"fault_rate": 1.0},
    "fault_kinds": {"fault_rate": 1.0, "fault_kinds": ["timeout"]},
    "prerequisite_depth": {"prerequisite_depth": 1},
    "near_duplicate_rate": {"near_duplicate_rate": 0.0},
    "stale_rate": {"stale_rate": 0.0},
    "legacy_format_rate": {"legacy_format_rate": 0.0},
}
"""A value of each vocabulary knob (with what it needs beside it) that differs from every gym's default."""

BASELINE: dict[str, dict[str, Any]] = {"fault_kinds": {"fault_rate": 1.0}}
"""What a knob's setting is compared with, when not the gym's defaults."""


def _domain(name: str) -> Domain:
    return TOY if name == "toy" else get_domain(name)


def _fingerprint(world: World) -> str:
    tasks = [t.model_dump(mode="json") for t in sorted(world.tasks, key=lambda t: t.id)]
    data = {"tasks": tasks, "faults": [f.model_dump(mode="json") for f in world.faults]}
    return hashlib.sha256(world.state_db + json.dumps(data, sort_keys=True).encode()).hexdigest()


def test_the_table_covers_every_vocabulary_knob() -> None:
    assert set(CHANGED_BY) == set(VOCABULARY)


@pytest.mark.parametrize("name", GYMS)
def test_every_gym_honours_or_refuses_every_vocabulary_knob(name: str) -> None:
    domain = _domain(name)
    assert set(VOCABULARY) <= set(domain.knobs) | set(domain.cannot)
    assert not set(domain.knobs) & set(domain.cannot)
    assert all(reason.strip() for reason in domain.cannot.values())


@pytest.mark.parametrize("knob", sorted(VOCABULARY))
@pytest.mark.parametrize("name", GYMS)
def test_an_honoured_knob_changes_what_the_gym_generates(name: str, knob: str) -> None:
    domain = _domain(name)
    if knob_refusal(domain, knob) is not None:
        assert knob in domain.cannot
        return
    base = _fingerprint(domain.generate(0, dict(BASELINE.get(knob, {}))))
    assert _fingerprint(domain.generate(0, dict(CHANGED_BY[knob]))) != base, f"{name} ignores {knob}"


@pytest.mark.parametrize("kind", sorted(WEAKNESS_KNOBS))
@pytest.mark.parametrize("name", GYMS)
def test_every_kind_is_targetable_or_refused_by_the_factory_with_the_reason(name: str, kind: str) -> None:
    domain = _domain(name)
    aim = WEAKNESS_KNOBS[kind]
    target = WeaknessTarget(kind=kind, focus_tags=list(aim.focus_tags), knobs=dict(aim.knobs))
    tags = {tag for t in domain.generate(0, {}).tasks for tag in t.tags}
    reason = kind_refusal(domain, kind, tags)
    kept, refused = targetable([target], domain, tags)
    if reason is None:
        assert kept == [target] and not refused
        world = domain.generate(1, {**aim.knobs, "focus_tags": list(aim.focus_tags)})
        assert any(set(t.tags) & set(aim.focus_tags) for t in world.tasks)
        return
    assert not kept and reason in refused[0]
    factory = LocalFactory()
    try:
        with pytest.raises(FactoryError) as refusal:
            factory.submit_request(VariantRequest(domain=name, targets=[target], variants=1))
    finally:
        factory.close()
    assert reason in str(refusal.value) and kind in str(refusal.value)


def test_a_gym_that_cannot_honour_a_knob_says_so_in_the_table_of_kinds() -> None:
    kinds = targetable_kinds(TOY)
    assert kinds["wrong_id"] is not None and "near_duplicate_rate" in kinds["wrong_id"]
    assert "one customer name per order" in kinds["wrong_id"]
    assert kinds["missed_policy_dependency"] is not None and "no depth leaves a task out" in kinds[
        "missed_policy_dependency"]
    assert kinds["no_error_recovery"] is None
    tags = {tag for t in TOY.generate(0, {"orders": 50}).tasks for tag in t.tags}
    assert targetable_kinds(TOY, tags)["leaked_internal_data"] == "no toy task carries a tag of leak_trap"


def test_diagnosis_reads_the_vocabulary() -> None:
    for kind, target in KIND_TARGETS.items():
        assert target.knobs == WEAKNESS_KNOBS[kind].knobs
        assert target.focus_tags == list(WEAKNESS_KNOBS[kind].focus_tags)
