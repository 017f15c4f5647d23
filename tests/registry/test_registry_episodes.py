from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from registry_factories import make_pack, records_for
from sqlalchemy import create_engine, text

from registry import EpisodeKey, Registry, RegistryError


def _round(reg: Registry, name: str = "c") -> int:
    model = reg.register_model("policy", "v0", kind="reference")
    campaign = reg.create_campaign(name, exist_ok=True)
    return reg.start_round(campaign.id, 0, model.id).id


def test_episode_writes_are_idempotent_and_round_trip(db_url: str, home: Path) -> None:
    pack = make_pack(0)
    records = records_for(pack, 40, attempts=2)
    with Registry(db_url, home) as reg:
        reg.add_pack(pack)
        round_id = _round(reg)
        assert reg.record_episodes(round_id, records[:25]) == 25
        assert reg.record_episodes(round_id, records) == 15
        assert reg.record_episodes(round_id, records) == 0
        assert reg.record_episodes(round_id, [records[0], records[0]]) == 0
        assert reg.record_episodes(round_id, []) == 0

        assert reg.round_episodes(round_id) == records
        assert reg.finished_episode_keys(round_id) == {EpisodeKey.of(r) for r in records}
        assert len({EpisodeKey.of(r) for r in records}) == 40

        summaries = reg.episode_summaries(round_id)
        assert [s.episode_id for s in summaries] == [r.episode_id for r in records]
        failed = summaries[0]
        assert not failed.passed and failed.score == 0.5 and failed.failed_kinds == ["side_effects", "state"]
        assert failed.failure_boundary == "agent" and failed.failure_kind == "gave_up"
        ok = summaries[1]
        assert ok.passed and ok.score == 1.0 and ok.failed_kinds == [] and ok.failure_boundary is None


def test_stages_are_separate_and_duplicates_in_a_batch_keep_the_first(db_url: str, home: Path) -> None:
    pack = make_pack(0)
    first, second = records_for(pack, 2)
    clash = second.model_copy(update={"task_id": first.task_id, "seed": first.seed, "reply": "other"})
    with Registry(db_url, home) as reg:
        reg.add_pack(pack)
        round_id = _round(reg)
        assert reg.record_episodes(round_id, [first, clash]) == 1
        assert reg.round_episodes(round_id)[0].reply == first.reply
        assert reg.record_episodes(round_id, [first, second], stage="after") == 2
        assert len(reg.round_episodes(round_id)) == 1
        assert len(reg.round_episodes(round_id, stage="after")) == 2
        assert len(reg.round_episodes(round_id, stage=None)) == 3
        assert reg.finished_episode_keys(round_id, stage="train") == set()


def test_a_batch_with_an_unregistered_task_writes_nothing(db_url: str, home: Path) -> None:
    pack, stranger = make_pack(0), make_pack(1)
    good = records_for(pack, 5)
    with Registry(db_url, home) as reg:
        reg.add_pack(pack)
        round_id = _round(reg)
        with pytest.raises(RegistryError, match=r"1 episode task\(s\) are not registered.*nothing was written"):
            reg.record_episodes(round_id, [*good, *records_for(stranger, 1)])
        assert reg.finished_episode_keys(round_id) == set()
        with pytest.raises(RegistryError, match="round id 999 is not in"):
            reg.record_episodes(999, good)
        assert reg.record_episodes(round_id, good) == 5


def test_a_write_that_fails_midway_is_rolled_back(db_url: str, home: Path) -> None:
    pack = make_pack(0)
    records = records_for(pack, 1500)
    with Registry(db_url, home) as reg:
        reg.add_pack(pack)
        round_id = _round(reg)
        engine = create_engine(db_url)
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE IF NOT EXISTS guard (x INTEGER)"))
            if engine.dialect.name == "sqlite":
                conn.execute(text("CREATE TRIGGER boom BEFORE INSERT ON episodes WHEN NEW.seed = 140 "
                                  "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"))
            else:
                conn.execute(text("ALTER TABLE episodes ADD CONSTRAINT boom CHECK (seed <> 140)"))
        engine.dispose()
        with pytest.raises(RegistryError, match="nothing was written"):
            reg.record_episodes(round_id, records)
        assert reg.finished_episode_keys(round_id) == set()


def _spawn(url: str, home: Path, round_id: int, start: int, stop: int, go: Path, cwd: Path) -> subprocess.Popen[str]:
    script = Path(__file__).with_name("registry_writer.py")
    args = [sys.executable, str(script), url, str(home), str(round_id), str(start), str(stop), "40", str(go)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)


def test_two_processes_writing_overlapping_episodes_lose_nothing(db_url: str, home: Path, tmp_path: Path) -> None:
    pack = make_pack(0, n_train=6, n_heldout=4)
    with Registry(db_url, home) as reg:
        reg.add_pack(pack)
        round_id = _round(reg)
        go = tmp_path / "go"
        writers = [_spawn(db_url, home, round_id, 0, 600, go, tmp_path),
                   _spawn(db_url, home, round_id, 300, 900, go, tmp_path)]
        go.touch()
        totals = []
        for proc in writers:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err[-2000:]
            totals.append(int(out.strip()))
        assert sum(totals) == 900
        assert min(totals) >= 300
        expected = {EpisodeKey.of(r) for r in records_for(pack, 900)}
        assert reg.finished_episode_keys(round_id) == expected
        stored = reg.episode_summaries(round_id)
        assert len(stored) == 900 == len({s.key for s in stored})
