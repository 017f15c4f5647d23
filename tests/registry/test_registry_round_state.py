"""Everything a round needs to resume or be audited is in the database: arms, stages, pools, reports, plans,
the model of every episode, and the packs' files (so a machine with another home can load them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from registry_factories import make_pack, make_record

from arena.core.pack import build_pack, pack_files
from registry import PoolPack, Registry, RegistryError, StageDone, WaveEntry, WeaknessEntry


def _round(reg: Registry, arm: str = "targeted", index: int = 0) -> tuple[int, int]:
    model = reg.register_model("policy", "v0", kind="reference")
    return reg.open_round("c", arm, index, model.id, settings={"arm": arm}).id, model.id


def test_a_campaign_and_its_arm_exist_only_with_a_round(db_url: str, home: Path) -> None:
    with Registry(db_url, home) as reg:
        model = reg.register_model("policy", "v0", kind="reference")
        assert reg.find_campaign("c") is None
        with pytest.raises(RegistryError, match="model id 999 is not registered"):
            reg.open_round("c", "targeted", 0, 999)
        assert reg.find_campaign("c") is None, "a refused round left its campaign behind"
        targeted = reg.open_round("c", "targeted", 0, model.id, settings={"arm": "targeted"})
        control = reg.open_round("c", "uniform", 0, model.id, settings={"arm": "uniform"})
        info = reg.campaign("c")
        assert [a.name for a in reg.arms(info.id)] == ["targeted", "uniform"]
        assert reg.arms(info.id)[1].settings == {"arm": "uniform"}
        assert targeted.arm_id != control.arm_id and targeted.index == control.index == 0
        assert [r.id for r in reg.rounds(info.id, arm="uniform")] == [control.id]
        assert [r.id for r in reg.rounds(info.id)] == [targeted.id, control.id]
        assert reg.open_round("c", "uniform", 0, model.id).id == control.id  # resumed, not a second round


def test_episodes_are_keyed_with_the_model_that_played_them(db_url: str, home: Path) -> None:
    with Registry(db_url, home) as reg:
        pack = make_pack()
        reg.add_pack(pack)
        rid, model_in = _round(reg)
        model_out = reg.register_model("policy", "v1", kind="reference", parent_id=model_in).id
        record = make_record(pack, pack.tasks[0])
        assert reg.record_episodes(rid, [record], stage="eval_after", model_id=model_in) == 1
        assert reg.record_episodes(rid, [record], stage="eval_after", model_id=model_out) == 1
        assert reg.record_episodes(rid, [record], stage="eval_after", model_id=model_out) == 0
        assert reg.stage_models(rid, "eval_after") == {model_in: 1, model_out: 1}
        assert len(reg.finished_episode_keys(rid, stage="eval_after", model_id=model_out)) == 1
        assert len(reg.round_episodes(rid, stage="eval_after", model_id=model_out)) == 1
        assert {s.model_id for s in reg.episode_summaries(rid, stage="eval_after")} == {model_in, model_out}
        with pytest.raises(RegistryError, match="model id 999 is not registered"):
            reg.record_episodes(rid, [make_record(pack, pack.tasks[1])], stage="eval_after", model_id=999)
        assert reg.drop_stage_episodes(rid, "eval_after", keep_model_id=model_out) == 1
        assert reg.stage_models(rid, "eval_after") == {model_out: 1}


def test_stages_pool_report_and_plan_are_recorded_with_the_stage_they_finish(db_url: str, home: Path) -> None:
    with Registry(db_url, home) as reg:
        base, variant = make_pack(0), make_pack(1, parent=None)
        for pack in (base, variant):
            reg.add_pack(pack)
        rid, model = _round(reg)
        pool = [PoolPack(pack_id=base.id, role="base"), PoolPack(pack_id=variant.id, role="added")]
        assert reg.record_pool(rid, pool, done=StageDone(stage="generate", model_id=model,
                                                         details={"variants": [variant.id]})) == 2
        assert reg.pool(rid) == pool
        report = {"weaknesses": [{"kind": "wrong_id", "share": 0.5}], "episodes": 4}
        reg.record_weaknesses(rid, [WeaknessEntry(kind="wrong_id", rank=1, score=0.4, share=0.5)], report=report,
                              done=StageDone(stage="diagnose", model_id=model))
        assert reg.weakness_report(rid) == report
        plan = {"strategy": "targeted", "entries": [{"pack_id": base.id, "task_id": base.tasks[0].id}]}
        wave = reg.record_wave(rid, [WaveEntry(pack_id=base.id, task_id=base.tasks[0].id, weight=1.0)],
                               {"k": 2}, plan=plan, done=StageDone(stage="plan", model_id=model))
        recorded = reg.wave(rid)
        assert recorded is not None and recorded.plan == plan == wave.plan
        stages = reg.stages(rid)
        assert list(stages) == ["generate", "diagnose", "plan"]
        assert stages["generate"].details == {"variants": [variant.id]} and stages["plan"].model_id == model
        assert reg.reset_stages(rid, ["plan", "diagnose"]) == 2
        assert list(reg.stages(rid)) == ["generate"]


def test_a_write_that_fails_marks_no_stage(db_url: str, home: Path) -> None:
    with Registry(db_url, home) as reg:
        rid, model = _round(reg)
        with pytest.raises(RegistryError, match="unregistered pack"):
            reg.record_pool(rid, [PoolPack(pack_id="f" * 64, role="base")],
                            done=StageDone(stage="generate", model_id=model))
        with pytest.raises(RegistryError, match="unregistered task"):
            reg.record_wave(rid, [WaveEntry(pack_id="f" * 64, task_id="t", weight=1.0)],
                            done=StageDone(stage="plan", model_id=model))
        with pytest.raises(RegistryError, match="model id 999"):
            reg.finish_stage(rid, StageDone(stage="train_model", model_id=999))
        assert reg.stages(rid) == {} and reg.pool(rid) == [] and reg.wave(rid) is None


def test_a_pack_is_loaded_from_the_database_on_a_machine_without_it(db_url: str, tmp_path: Path) -> None:
    pack = build_pack("procurement", seed=0)
    with Registry(db_url, tmp_path / "first") as first:
        first.add_pack(pack)
    with Registry(db_url, tmp_path / "second") as second:
        assert pack.id not in second.packs
        loaded = second.load_pack(pack.id)
        assert pack_files(loaded) == pack_files(pack)
        assert second.packs.verify(pack.id), "the pack was not cached in this home's store"
        with pytest.raises(RegistryError, match=f"pack {'e' * 64} is neither in the pack store"):
            second.load_pack("e" * 64)


def test_a_lease_is_taken_over_from_a_dead_holder_only_while_it_still_holds_it(db_url: str, home: Path) -> None:
    with Registry(db_url, home) as reg:
        assert reg.acquire_lease("c", "host:1:0:dead", 600).held
        taken = reg.take_over_lease("c", "host:1:0:dead", "host:2:0:new", 600)
        assert taken.held and taken.holder == "host:2:0:new" and taken.previous == "host:1:0:dead"
        refused = reg.take_over_lease("c", "host:1:0:dead", "host:3:0:late", 600)
        assert not refused.held and refused.holder == "host:2:0:new"
