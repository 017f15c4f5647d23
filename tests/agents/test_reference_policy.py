import json

import pytest
from toy_domain import TOY

from arena.agents.reference import (
    FAILURE_MODES,
    PolicyParams,
    ReferencePolicy,
    convert,
)
from arena.core.gym import Gym
from arena.core.pack import build_pack


@pytest.fixture(scope="module")
def pack():
    return build_pack(TOY, seed=0, knobs={"orders": 200})


def _play(pack, params, task_id, seed):
    with Gym(pack, TOY) as gym:
        obs = gym.reset(task_id, seed=0)
        run = ReferencePolicy(params).run_episode(obs, gym.call_tool, seed=seed)
        verdict = gym.verify(run.reply)
        return run, [s.model_dump() for s in gym.trace], verdict


def test_same_seed_same_episode(pack):
    params = PolicyParams.initial()
    a = _play(pack, params, "refund_timeout-01", 11)
    b = _play(pack, params, "refund_timeout-01", 11)
    assert a[0] == b[0] and a[1] == b[1] and a[2] == b[2]


def test_different_seeds_explore_different_strategies(pack):
    params = PolicyParams.initial()
    traces = {json.dumps(_play(pack, params, "refund_timeout-01", s)[1]) for s in range(30)}
    assert len(traces) > 1


def test_expert_passes_and_initial_mostly_fails(pack):
    expert = [_play(pack, PolicyParams.expert(), t.id, s)[2].passed for t in pack.tasks for s in range(5)]
    initial = [_play(pack, PolicyParams.initial(), t.id, s)[2].passed for t in pack.tasks for s in range(40)]
    assert all(expert)
    assert sum(initial) / len(initial) < 0.5


def test_policy_never_sees_gold_or_assertions(pack):
    with Gym(pack, TOY) as gym:
        seen = []
        obs = gym.reset("refund_plain-01")
        original = obs.model_dump_json()
        ReferencePolicy(PolicyParams.expert()).run_episode(obs, lambda n, a=None: seen.append(n) or gym.call_tool(n, a),
                                                           seed=0)
        assert "assertions" not in original and "gold" not in original
        assert seen == ["get_order", "check_refund", "refund_order"]


@pytest.mark.parametrize("mode", sorted(FAILURE_MODES))
def test_injected_failure_modes_force_their_decisions(mode):
    params = PolicyParams.with_failure(mode)
    for key, strategy in FAILURE_MODES[mode].items():
        assert params.probabilities(key)[strategy] > 0.999
    assert params.name == f"reference-failure:{mode}"


def test_missed_dependency_mode_skips_the_prerequisite(pack):
    run, trace, verdict = _play(pack, PolicyParams.with_failure("missed_policy_dependency"), "refund_plain-01", 0)
    assert "check_refund" not in [s["tool"] for s in trace]
    assert not verdict.passed


def test_no_error_recovery_mode_gives_up_after_timeout(pack):
    run, trace, verdict = _play(pack, PolicyParams.with_failure("no_error_recovery"), "refund_timeout-01", 0)
    assert run.stop_reason == "gave_up"
    assert trace[-1]["error"]["fault"] == "timeout"


def test_save_and_load_round_trip(tmp_path):
    params = PolicyParams.initial().model_copy(update={"version": 3})
    path = params.save(tmp_path / "p.json")
    back = PolicyParams.load(path)
    assert back == params and back.ref == params.ref and back.ref.startswith("reference@v3:")


def test_load_refuses_other_schema_and_missing_keys(tmp_path):
    raw = PolicyParams.initial().model_dump()
    raw["schema_version"] = 9
    (tmp_path / "a.json").write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="schema_version 9"):
        PolicyParams.load(tmp_path / "a.json")
    raw = PolicyParams.initial().model_dump()
    del raw["logits"]["reply|plain"]
    (tmp_path / "b.json").write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="reply\\|plain"):
        PolicyParams.load(tmp_path / "b.json")


@pytest.mark.parametrize(("fmt", "raw", "want"), [
    ("date", "03/15/2024", "2024-03-15"),
    ("date", "15.03.2024", "2024-03-15"),
    ("date", "20240315", "2024-03-15"),
    ("date", "Mar 15, 2024", "2024-03-15"),
    ("date", "15 March 2024", "2024-03-15"),
    ("date", "08-Jun-2025", "2025-06-08"),
    ("money", "$1,234.50", 1234.5),
    ("money", "€99,90", 99.9),
    ("code", "gold tier", "GOLD-TIER"),
])
def test_convert_legacy_formats(fmt, raw, want):
    assert convert(fmt, raw) == want
