"""The ``gym_knobs`` setting: a campaign's base pack with more tasks of each template, in the same world."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from arena.agents.reference import PolicyParams
from flows.packs import base_packs, gym_pack
from flows.rollouts import heldout_keys
from flows.settings import GymloopSettings, SettingsError, load_settings
from flows.variants import generate_variants
from registry import ModelInfo, Registry
from tests.curriculum.test_curriculum_coverage import DOMAIN, report_with_two_equal_grains


def test_gym_knobs_give_the_campaign_more_held_out_tasks_in_the_same_world(tmp_path):
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    plain = load_settings(domains=["procurement"])
    more = load_settings(domains=["procurement"], gym_knobs={"procurement": {"tasks_per_template": 8}})
    [default], [bigger] = base_packs(registry, plain), base_packs(registry, more)
    assert bigger.manifest.knobs == {"tasks_per_template": 8} and bigger.manifest.seed == default.manifest.seed == 0
    assert bigger.state_db == default.state_db
    assert len(heldout_keys([bigger], more)) > len(heldout_keys([default], plain))
    assert {p.id for p in registry.list_packs("procurement")} >= {default.id, bigger.id}


@pytest.mark.parametrize(("knobs", "needle"), [
    ({"helpdesk": {"tasks_per_template": 8}}, "gym_knobs names gym 'helpdesk', which is not one of the campaign's"),
    ({"procurement": {"tasks_per_tempalte": 8}}, "unknown procurement knob(s) ['tasks_per_tempalte'] in gym_knobs"),
])
def test_knobs_of_another_gym_or_an_unknown_knob_are_refused_by_name(knobs, needle):
    with pytest.raises(SettingsError) as caught:
        load_settings(domains=["procurement"], gym_knobs=knobs)
    assert needle in str(caught.value)


def test_the_embedded_factory_makes_variants_of_a_base_pack_built_with_knobs(gymloop_home, tmp_path):
    settings = GymloopSettings(home=gymloop_home, domains=[DOMAIN], gym_knobs={DOMAIN: {"tasks_per_template": 6}},
                               variants_per_round=1, tasks_per_variant=2, gate_k=1, gate_band_min=0, gate_band_max=1)
    base = gym_pack(settings, DOMAIN)
    start = PolicyParams.initial()
    model = ModelInfo(id=1, name="start", version="v0", kind="reference", parent_id=None,
                      artifact=str(start.save(tmp_path / "start.json")), endpoint=None,
                      params_hash=start.content_hash(), details={}, created_at=datetime.now(UTC))
    [result] = generate_variants(settings, report_with_two_equal_grains(), [base], model, 0, campaign="c")
    assert result.packs and {p.manifest.parent for p in result.packs} == {base.id}
