"""Transfer between tools: shared skills plus per-tool offsets, trained in the share the parameters set."""

import pytest

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.core.episode import EpisodeRecord
from arena.core.pack import build_pack
from arena.core.results import Verdict
from arena.rollout import RolloutConfig, run_rollouts
from curriculum import Wave
from trainers import GRPOTrainer, load_reference, save_reference

KEY = "prerequisite|strong"


def _episode(task: str, seed: int, score: float, tool: str, choice: str) -> EpisodeRecord:
    return EpisodeRecord(episode_id=f"{task}-{seed}", pack_id="P", domain="toy", task_id=task, split="train",
                         category="c", seed=seed, agent="reference", model_ref="m",
                         verdict=Verdict(passed=score == 1.0, score=score),
                         decisions=[{"key": KEY, "choice": choice, "tool": tool}])


def _practise_tool_a(tmp_path, transfer: float) -> tuple[PolicyParams, PolicyParams]:
    start = PolicyParams.initial(transfer=transfer)
    ref = save_reference(start, tmp_path / "start")
    episodes = [_episode("t", 0, 1.0, "tool_a", "do"), _episode("t", 1, 0.0, "tool_a", "skip")]
    return start, load_reference(GRPOTrainer(tmp_path / "out").train(ref, Wave(strategy="t"), episodes))


def test_no_transfer_moves_only_the_practised_tool(tmp_path):
    start, new = _practise_tool_a(tmp_path, 0.0)
    assert new.logits == start.logits
    assert new.probabilities(KEY, "tool_a")["do"] > start.probabilities(KEY, "tool_a")["do"] + 0.05
    assert new.probabilities(KEY, "tool_b") == start.probabilities(KEY, "tool_b")
    assert set(new.offsets) == {f"{KEY}@tool_a"}


def test_full_transfer_moves_the_shared_skill_for_every_tool(tmp_path):
    start, new = _practise_tool_a(tmp_path, 1.0)
    assert new.offsets == {}
    gain_a = new.probabilities(KEY, "tool_a")["do"] - start.probabilities(KEY, "tool_a")["do"]
    gain_b = new.probabilities(KEY, "tool_b")["do"] - start.probabilities(KEY, "tool_b")["do"]
    assert gain_a > 0.05 and gain_b == pytest.approx(gain_a)


def test_partial_transfer_moves_the_other_tool_less(tmp_path):
    start, new = _practise_tool_a(tmp_path, 0.5)
    gain_a = new.probabilities(KEY, "tool_a")["do"] - start.probabilities(KEY, "tool_a")["do"]
    gain_b = new.probabilities(KEY, "tool_b")["do"] - start.probabilities(KEY, "tool_b")["do"]
    assert 0 < gain_b < gain_a


def test_uneven_start_and_round_trip(tmp_path):
    params = PolicyParams.initial({}, grain_slips={f"{KEY}@tool_a": 0.9}, transfer=0.25)
    careless = 1 - params.probabilities(KEY, "tool_a")["do"]
    assert careless == pytest.approx(0.9)
    assert 1 - params.probabilities(KEY, "tool_b")["do"] == pytest.approx(0.5)
    loaded = PolicyParams.load(params.save(tmp_path / "p.json"))
    assert loaded == params and loaded.content_hash() == params.content_hash()
    assert params.content_hash() != PolicyParams.initial({}).content_hash()
    with pytest.raises(ValueError, match="not 'kind|context@tool'"):
        PolicyParams.initial(grain_slips={"prerequisite|nowhere@tool_a": 0.5})


def test_decisions_name_their_tool_and_the_offset_changes_play():
    pack = build_pack("helpdesk", seed=0)
    config = RolloutConfig(seeds=[0, 1], split="train")
    runs = run_rollouts(ReferencePolicy(PolicyParams.initial()), [pack], config)
    prereq = [d for r in runs for d in r.decisions if d["key"] == KEY]
    assert prereq and all(d["tool"] in {t.name for t in pack.tools} for d in prereq)
    tool = prereq[0]["tool"]
    careful = PolicyParams.initial(grain_slips={f"{KEY}@{tool}": 0.01})
    again = run_rollouts(ReferencePolicy(careful), [pack], config)
    skips = [d for r in again for d in r.decisions if d["key"] == KEY and d["tool"] == tool and d["choice"] == "skip"]
    before = [d for d in prereq if d["tool"] == tool and d["choice"] == "skip"]
    assert len(skips) < len(before)
