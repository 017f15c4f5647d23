from __future__ import annotations

from pathlib import Path

import pytest
from registry_factories import make_pack, make_record

from registry import Registry, RegistryError, TaskKey, WaveEntry, WeaknessEntry


def test_models_register_idempotently_and_refuse_conflicts(db_url: str, home: Path) -> None:
    with Registry(db_url, home) as reg:
        base = reg.register_model("policy", "v0", kind="reference", artifact="/models/v0.json", params_hash="a" * 64)
        assert reg.register_model("policy", "v0", kind="reference", artifact="/models/v0.json",
                                  params_hash="a" * 64) == base
        with pytest.raises(RegistryError, match=r"policy:v0 is already registered.*artifact"):
            reg.register_model("policy", "v0", kind="reference", artifact="/elsewhere.json", params_hash="a" * 64)
        with pytest.raises(RegistryError, match="parent model id 42 is not registered"):
            reg.register_model("policy", "v1", kind="reference", parent_id=42)
        served = reg.register_model("served", "2026-01", kind="litellm", endpoint="openai/gpt-x@http://127.0.0.1:8000")
        assert reg.model(served.id).endpoint == "openai/gpt-x@http://127.0.0.1:8000"
        assert reg.find_model("served", "nope") is None
        with pytest.raises(RegistryError, match="model id 999"):
            reg.model(999)


def test_rounds_resume_until_finished(db_url: str, home: Path) -> None:
    with Registry(db_url, home) as reg:
        m0 = reg.register_model("policy", "v0", kind="reference")
        m1 = reg.register_model("policy", "v1", kind="reference", parent_id=m0.id)
        camp = reg.create_campaign("c", {"rounds": 3})
        with pytest.raises(RegistryError, match="campaign 'c' already exists"):
            reg.create_campaign("c")
        assert reg.create_campaign("c", exist_ok=True) == camp == reg.campaign("c")
        first = reg.start_round(camp.id, 0, m0.id)
        failed = reg.fail_round(first.id, "trainer crashed")
        assert failed.status == "failed" and failed.error == "trainer crashed" and failed.finished_at is not None
        resumed = reg.start_round(camp.id, 0, m0.id)
        assert resumed.id == first.id and resumed.status == "running" and resumed.error is None
        with pytest.raises(RegistryError, match="started from model"):
            reg.start_round(camp.id, 0, m1.id)
        done = reg.finish_round(first.id, m1.id, {"lift": 0.12})
        assert done.status == "finished" and done.model_out_id == m1.id and done.details == {"lift": 0.12}
        assert done.started_at <= done.finished_at  # type: ignore[operator]
        with pytest.raises(RegistryError, match="already finished"):
            reg.start_round(camp.id, 0, m0.id)
        assert [r.index for r in reg.rounds(camp.id)] == [0]
        with pytest.raises(RegistryError, match="round id 77"):
            reg.finish_round(77, None)


def test_lineage_walks_models_rounds_waves_and_packs(db_url: str, home: Path) -> None:
    base_pack = make_pack(0)
    variant = make_pack(1, parent=base_pack.id)
    grand = make_pack(2, parent=variant.id)
    with Registry(db_url, home) as reg:
        for pack in (base_pack, variant, grand):
            reg.add_pack(pack)
        m0 = reg.register_model("policy", "v0", kind="reference")
        camp = reg.create_campaign("lineage")
        r0 = reg.start_round(camp.id, 0, m0.id)
        weaknesses = [
            WeaknessEntry(kind="wrong_id", label="passes names for ids", rank=1, score=0.4, share=0.5,
                          interval_low=0.3, interval_high=0.5, evidence={"episodes": ["e1", "e2"]}),
            WeaknessEntry(kind="gave_up_early", rank=2, score=0.1),
        ]
        assert reg.record_weaknesses(r0.id, weaknesses) == 2
        wave = [WaveEntry(pack_id=variant.id, task_id=variant.tasks[0].id, weight=2.0, reason="targeted:wrong_id"),
                WaveEntry(pack_id=base_pack.id, task_id=base_pack.tasks[1].id, weight=0.5, reason="replay")]
        stored = reg.record_wave(r0.id, wave, {"band": [0.2, 0.8]})
        assert stored.entries == wave and reg.wave(r0.id) == stored
        m1 = reg.register_model("policy", "v1", kind="reference", parent_id=m0.id, artifact="/m/v1.json")
        reg.finish_round(r0.id, m1.id)

        r1 = reg.start_round(camp.id, 1, m1.id)
        reg.record_weaknesses(r1.id, [WeaknessEntry(kind="stale_state", rank=1, score=0.3)])
        reg.record_wave(r1.id, [WaveEntry(pack_id=grand.id, task_id=grand.tasks[0].id, weight=1.0, reason="explore")])
        m2 = reg.register_model("policy", "v2", kind="reference", parent_id=m1.id)
        reg.finish_round(r1.id, m2.id)

        lineage = reg.lineage(m2.id)
        assert [m.version for m in lineage.models] == ["v2", "v1", "v0"]
        newest, middle, oldest = lineage.steps
        assert newest.round is not None and newest.round.id == r1.id
        assert [w.kind for w in newest.weaknesses] == ["stale_state"]
        assert [p.id for p in newest.packs] == [base_pack.id, variant.id, grand.id]
        assert middle.round is not None and middle.round.index == 0
        assert middle.weaknesses == weaknesses and middle.wave == wave
        assert {p.id for p in middle.packs} == {base_pack.id, variant.id}
        assert oldest.round is None and oldest.wave == [] and oldest.model.id == m0.id
        assert [m.id for m in reg.lineage(m0.id).models] == [m0.id]


def test_weaknesses_and_waves_are_replaced_and_validated(db_url: str, home: Path) -> None:
    pack = make_pack(0)
    with Registry(db_url, home) as reg:
        reg.add_pack(pack)
        m0 = reg.register_model("policy", "v0", kind="reference")
        r0 = reg.start_round(reg.create_campaign("c").id, 0, m0.id)
        reg.record_weaknesses(r0.id, [WeaknessEntry(kind="a", rank=1, score=1.0)])
        reg.record_weaknesses(r0.id, [WeaknessEntry(kind="b", rank=1, score=0.5)])
        assert [w.kind for w in reg.weaknesses(r0.id)] == ["b"]
        with pytest.raises(RegistryError, match=r"share rank\(s\) \[1\]"):
            reg.record_weaknesses(r0.id, [WeaknessEntry(kind="x", rank=1, score=1), WeaknessEntry(kind="y", rank=1,
                                                                                                   score=1)])
        assert [w.kind for w in reg.weaknesses(r0.id)] == ["b"]
        entry = WaveEntry(pack_id=pack.id, task_id=pack.tasks[0].id, weight=1.0, reason="targeted:b")
        reg.record_wave(r0.id, [entry])
        with pytest.raises(RegistryError, match="unregistered task"):
            reg.record_wave(r0.id, [WaveEntry(pack_id="f" * 64, task_id="nope", weight=1.0)])
        assert reg.wave(r0.id) is not None and reg.wave(r0.id).entries == [entry]  # type: ignore[union-attr]
        second = WaveEntry(pack_id=pack.id, task_id=pack.tasks[1].id, weight=3.0, reason="replay")
        assert reg.record_wave(r0.id, [second, entry]).entries == [second, entry]
        assert reg.wave(r0.id).entries == [second, entry]  # type: ignore[union-attr]
        assert reg.status().counts["wave_entries"] == 2 and reg.status().counts["waves"] == 1
        assert reg.wave(12345) is None


def test_task_history_counts_valid_episodes_per_round(db_url: str, home: Path) -> None:
    pack = make_pack(0)
    hard, easy = pack.tasks[0], pack.tasks[1]
    with Registry(db_url, home) as reg:
        reg.add_pack(pack)
        m0 = reg.register_model("policy", "v0", kind="reference")
        camp = reg.create_campaign("c")
        r0 = reg.start_round(camp.id, 0, m0.id)
        reg.record_episodes(r0.id, [
            make_record(pack, hard, seed=0, passed=False), make_record(pack, hard, seed=1, passed=True),
            make_record(pack, hard, seed=2, passed=True).model_copy(update={"invalid": True}),
            make_record(pack, easy, seed=0, passed=True),
        ])
        reg.record_episodes(r0.id, [make_record(pack, hard, seed=0, passed=True)], stage="after")
        m1 = reg.register_model("policy", "v1", kind="reference", parent_id=m0.id)
        reg.finish_round(r0.id, m1.id)
        r1 = reg.start_round(camp.id, 1, m1.id)
        reg.record_episodes(r1.id, [make_record(pack, hard, seed=s, passed=True) for s in range(3)])

        hard_key = TaskKey(pack_id=pack.id, task_id=hard.id)
        unseen = TaskKey(pack_id=pack.id, task_id=pack.tasks[2].id)
        history = reg.task_history([hard_key, unseen])
        assert set(history) == {hard_key, unseen} and history[unseen] == []
        rounds = history[hard_key]
        assert [(h.round_index, h.episodes, h.passes) for h in rounds] == [(0, 2, 1), (1, 3, 3)]
        assert rounds[0].pass_rate == 0.5 and rounds[0].mean_score == pytest.approx(0.75)
        assert rounds[0].model_in_id == m0.id and rounds[1].model_in_id == m1.id
        every = reg.task_history()
        assert set(every) == {hard_key, TaskKey(pack_id=pack.id, task_id=easy.id)}
        after = reg.task_history([hard_key], stage="after")[hard_key]
        assert [(h.round_id, h.passes) for h in after] == [(r0.id, 1)]
        other = reg.create_campaign("other")
        assert reg.task_history([hard_key], campaign_id=other.id)[hard_key] == []
