"""Resume and idempotency are scoped: per round and stage for episodes, per round for waves."""

from __future__ import annotations

from pathlib import Path

import pytest
from registry_factories import make_pack, make_record

from registry import Registry, RegistryError, WaveEntry


def _two_rounds(reg: Registry) -> tuple[int, int]:
    model = reg.register_model("policy", "v0", kind="reference")
    camp = reg.create_campaign("c")
    return reg.start_round(camp.id, 0, model.id).id, reg.start_round(camp.id, 1, model.id).id


def test_an_episode_key_held_by_another_round_or_stage_is_still_new(db_url: str, home: Path) -> None:
    with Registry(db_url, home) as reg:
        pack = make_pack()
        reg.add_pack(pack)
        first, second = _two_rounds(reg)
        record = make_record(pack, pack.tasks[0])
        assert reg.record_episodes(first, [record]) == 1
        assert reg.record_episodes(second, [record]) == 1
        assert reg.record_episodes(second, [record], stage="after") == 1
        assert reg.record_episodes(second, [record], stage="after") == 0
        assert len(reg.round_episodes(second, stage=None)) == 2


def test_a_round_finishes_without_a_new_model_and_refuses_an_unknown_one(db_url: str, home: Path) -> None:
    with Registry(db_url, home) as reg:
        first, second = _two_rounds(reg)
        assert reg.finish_round(first, None, {"lift": 0.1}).model_out_id is None
        with pytest.raises(RegistryError, match=f"round {second}: model id 999 is not registered"):
            reg.finish_round(second, 999)


def test_recording_a_rounds_wave_again_leaves_other_rounds_waves_alone(db_url: str, home: Path) -> None:
    with Registry(db_url, home) as reg:
        pack = make_pack()
        reg.add_pack(pack)
        first, second = _two_rounds(reg)
        entries = [WaveEntry(pack_id=pack.id, task_id=t.id, weight=1.0) for t in pack.tasks[:2]]
        reg.record_wave(first, entries)
        reg.record_wave(second, entries[:1])
        reg.record_wave(second, entries[1:])
        kept = reg.wave(first)
        assert kept is not None and [e.task_id for e in kept.entries] == [e.task_id for e in entries]
        again = reg.wave(second)
        assert again is not None and [e.task_id for e in again.entries] == [entries[1].task_id]


def test_a_wave_naming_unregistered_tasks_is_refused_naming_them(db_url: str, home: Path) -> None:
    with Registry(db_url, home) as reg:
        first, _ = _two_rounds(reg)
        ghosts = [WaveEntry(pack_id="f" * 64, task_id=f"ghost-{i}", weight=1.0) for i in range(7)]
        with pytest.raises(RegistryError) as caught:
            reg.record_wave(first, ghosts)
    shown = ", ".join(f"{'f' * 12}/ghost-{i}" for i in range(5))
    assert str(caught.value) == f"round {first}: wave names 7 unregistered task(s) ({shown})"
