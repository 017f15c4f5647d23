"""The ``gym_knobs`` setting: a campaign's base pack with more tasks of each template, in the same world."""

from __future__ import annotations

import pytest

from flows.packs import base_packs
from flows.rollouts import heldout_keys
from flows.settings import SettingsError, load_settings
from registry import Registry


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
