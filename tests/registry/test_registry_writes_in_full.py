"""Every registry write keeps every field it was given, refuses what it must with a message naming it, and
leaves nothing behind when the database refuses it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from registry_factories import make_pack, make_record, records_for
from sqlalchemy import Engine, create_engine, event, text

import registry.registry as registry_module
from arena.core.pack import pack_files
from registry import Registry, RegistryError, WaveEntry, WeaknessEntry


class Clock:
    """A settable clock standing in for the registry's ``utcnow``."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fixed = Clock()
    monkeypatch.setattr(registry_module, "utcnow", fixed)
    return fixed


@pytest.fixture
def reg(tmp_path: Path) -> Iterator[Registry]:
    with Registry(f"sqlite:///{tmp_path / 'registry.db'}", tmp_path / "home") as opened:
        yield opened


def _execute(reg: Registry, statement: str) -> None:
    engine = create_engine(reg.url)
    with engine.begin() as conn:
        conn.execute(text(statement))
    engine.dispose()


def test_a_model_keeps_every_field_and_a_conflict_names_each_differing_one(reg: Registry, clock: Clock) -> None:
    parent = reg.register_model("policy", "v0", kind="reference")
    child = reg.register_model("policy", "v1", kind="trained", parent_id=parent.id, artifact="/m/v1",
                               endpoint="http://127.0.0.1:8000/v1", params_hash="abc", details={"lr": 0.1})
    assert (child.name, child.version, child.kind, child.parent_id, child.artifact, child.endpoint,
            child.params_hash, child.details) == ("policy", "v1", "trained", parent.id, "/m/v1",
                                                  "http://127.0.0.1:8000/v1", "abc", {"lr": 0.1})
    assert child.created_at == clock.now
    assert reg.model(child.id) == child and reg.find_model("policy", "v1") == child
    assert reg.register_model("policy", "v1", kind="trained", parent_id=parent.id, artifact="/m/v1",
                              endpoint="http://127.0.0.1:8000/v1", params_hash="abc") == child
    with pytest.raises(RegistryError) as caught:
        reg.register_model("policy", "v1", kind="export", parent_id=parent.id, artifact="/m/other",
                           endpoint="http://127.0.0.1:8000/v1", params_hash="abc")
    message = str(caught.value)
    assert message.startswith(f"model policy:v1 is already registered (id {child.id}) with different ")
    assert "kind ('trained' != 'export')" in message and "artifact ('/m/v1' != '/m/other')" in message
    assert "endpoint" not in message and "params_hash" not in message
    with pytest.raises(RegistryError, match=r"^model policy:v2: parent model id 999 is not registered$"):
        reg.register_model("policy", "v2", kind="trained", parent_id=999)
    assert reg.find_model("policy", "v2") is None


@pytest.mark.parametrize("field", ["parent_id", "endpoint", "params_hash"])
def test_a_model_differing_in_one_field_is_refused(reg: Registry, field: str) -> None:
    base = reg.register_model("policy", "v0", kind="reference")
    values: dict[str, object] = {"parent_id": None, "endpoint": None, "params_hash": None}
    reg.register_model("policy", "v1", kind="trained", **values)  # type: ignore[arg-type]
    values[field] = base.id if field == "parent_id" else "other"
    with pytest.raises(RegistryError, match=f"{field} \\(None != "):
        reg.register_model("policy", "v1", kind="trained", **values)  # type: ignore[arg-type]


def test_a_pack_keeps_its_manifest_and_each_tasks_content_hash(reg: Registry, clock: Clock) -> None:
    parent = make_pack(0)
    pack = make_pack(5, parent=parent.id, n_train=2, n_heldout=1)
    info = reg.add_pack(pack)
    m = pack.manifest
    assert (info.id, info.parent, info.domain, info.schema_version, info.seed, info.knobs, info.provenance,
            info.created_by) == (pack.id, parent.id, m.domain, m.schema_version, 5, dict(m.knobs),
                                 dict(m.provenance), m.created_by)
    assert info.storage_path == str(reg.packs.path(pack.id)) and info.added_at == clock.now
    files = pack_files(pack)
    tasks = reg.tasks(pack.id)
    assert [(t.task_id, t.split, t.category, t.tags, t.domain, t.content_hash) for t in tasks] == [
        (t.id, t.split, t.category, list(t.tags), m.domain, hashlib.sha256(files[f"tasks/{t.id}.json"]).hexdigest())
        for t in sorted(pack.tasks, key=lambda t: t.id)
    ]
    clock.advance(60)
    assert reg.add_pack(pack) == info
    assert len(reg.tasks(pack.id)) == 3


def test_a_campaign_keeps_its_settings_and_a_second_create_is_refused_or_returned(reg: Registry,
                                                                                  clock: Clock) -> None:
    made = reg.create_campaign("nightly", {"rounds": 3})
    assert (made.name, made.settings, made.created_at) == ("nightly", {"rounds": 3}, clock.now)
    with pytest.raises(RegistryError, match=rf"^campaign 'nightly' already exists \(id {made.id}\) in sqlite:///"):
        reg.create_campaign("nightly", {"rounds": 9})
    assert reg.create_campaign("nightly", {"rounds": 9}, exist_ok=True) == made
    assert reg.campaign("nightly").settings == {"rounds": 3}
    assert reg.create_campaign("other").settings == {}


def test_starting_resuming_finishing_and_failing_a_round(reg: Registry, clock: Clock) -> None:
    model = reg.register_model("policy", "v0", kind="reference")
    other = reg.register_model("policy", "v1", kind="trained")
    camp = reg.create_campaign("c")
    with pytest.raises(RegistryError, match=r"^campaign id 999 is not in sqlite:///"):
        reg.start_round(999, 0, model.id)
    with pytest.raises(RegistryError, match=r"^round 0: model id 999 is not registered$"):
        reg.start_round(camp.id, 0, 999)
    assert reg.rounds(camp.id) == []

    started = reg.start_round(camp.id, 0, model.id)
    assert (started.campaign_id, started.index, started.status, started.model_in_id, started.model_out_id,
            started.started_at, started.finished_at, started.error, started.details) == (
        camp.id, 0, "running", model.id, None, clock.now, None, None, {})

    clock.advance(10)
    failed = reg.fail_round(started.id, "SIGTERM", status="interrupted")
    assert (failed.status, failed.error, failed.finished_at) == ("interrupted", "SIGTERM", clock.now)
    assert reg.fail_round(started.id, "boom").status == "failed"
    with pytest.raises(RegistryError, match=rf"started from model {model.id}, not {other.id}$"):
        reg.start_round(camp.id, 0, other.id)

    clock.advance(10)
    resumed = reg.start_round(camp.id, 0, model.id)
    assert resumed.id == started.id
    assert (resumed.status, resumed.started_at, resumed.finished_at, resumed.error) == ("running", clock.now, None,
                                                                                         None)

    reg.finish_round(started.id, None, {"lift": 0.1, "pass": 0.5})
    clock.advance(10)
    done = reg.finish_round(started.id, other.id, {"pass": 0.6})
    assert (done.status, done.model_out_id, done.finished_at, done.error, done.details) == (
        "finished", other.id, clock.now, None, {"lift": 0.1, "pass": 0.6})
    with pytest.raises(RegistryError, match=rf"^round 0 of campaign {camp.id} \(id {started.id}\) already finished$"):
        reg.start_round(camp.id, 0, model.id)
    for write in (lambda: reg.finish_round(999, None), lambda: reg.fail_round(999, "x")):
        with pytest.raises(RegistryError, match=r"^round id 999 is not in sqlite:///"):
            write()


def test_weaknesses_are_replaced_whole_and_shared_ranks_refused(reg: Registry) -> None:
    model = reg.register_model("policy", "v0", kind="reference")
    round_id = reg.start_round(reg.create_campaign("c").id, 0, model.id).id
    first = [WeaknessEntry(kind="wrong_id", rank=1, score=0.5, share=0.5, evidence={"n": 3}),
             WeaknessEntry(kind="stale_state", rank=2, score=0.2)]
    assert reg.record_weaknesses(round_id, first) == 2
    assert reg.weaknesses(round_id) == first
    with pytest.raises(RegistryError, match=rf"^round {round_id}: weaknesses share rank\(s\) \[1, 2\]$"):
        reg.record_weaknesses(round_id, first + first)
    assert reg.weaknesses(round_id) == first
    assert reg.record_weaknesses(round_id, first[1:]) == 1
    assert reg.weaknesses(round_id) == first[1:]
    with pytest.raises(RegistryError, match=r"^round id 999 is not in"):
        reg.record_weaknesses(999, first)


def test_a_lease_expires_ttl_after_its_last_renewal_and_a_takeover_restarts_it(reg: Registry, clock: Clock) -> None:
    first = reg.acquire_lease("c", "a", 30)
    assert (first.holder, first.acquired_at, first.expires_at, first.held) == ("a", clock.now,
                                                                              clock.now + timedelta(seconds=30), True)
    clock.advance(20)
    renewed = reg.acquire_lease("c", "a", 30)
    assert (renewed.acquired_at, renewed.expires_at) == (first.acquired_at, clock.now + timedelta(seconds=30))
    clock.advance(29)
    refused = reg.acquire_lease("c", "b", 30)
    assert (refused.held, refused.holder, refused.expires_at) == (False, "a", renewed.expires_at)
    clock.advance(2)
    taken = reg.acquire_lease("c", "b", 45)
    assert (taken.held, taken.holder, taken.acquired_at, taken.expires_at) == (
        True, "b", clock.now, clock.now + timedelta(seconds=45))
    assert not reg.release_lease("c", "a") and not reg.release_lease("elsewhere", "b")
    assert not reg.acquire_lease("c", "a", 30).held
    assert reg.release_lease("c", "b")
    assert reg.acquire_lease("c", "a", 30).held


def test_a_lease_is_taken_over_exactly_when_it_lapses(reg: Registry, clock: Clock) -> None:
    reg.acquire_lease("c", "a", 30)
    clock.advance(30)
    assert reg.acquire_lease("c", "b", 30).held


class Lineage:
    """A model, a campaign with round 0 started, a registered pack and a held lease, to write against."""

    def __init__(self, reg: Registry) -> None:
        self.model = reg.register_model("policy", "v0", kind="reference")
        self.campaign = reg.create_campaign("c")
        self.round = reg.start_round(self.campaign.id, 0, self.model.id)
        self.pack = make_pack(0)
        reg.add_pack(self.pack)
        reg.acquire_lease("held", "a", 30)


WRITES = {
    "register_model": ("INSERT", "models", lambda reg, w: reg.register_model("policy", "v9", kind="reference"),
                       lambda w: "registering model policy:v9"),
    "create_campaign": ("INSERT", "campaigns", lambda reg, w: reg.create_campaign("late"),
                        lambda w: "creating campaign 'late'"),
    "acquire_lease": ("INSERT", "campaign_leases", lambda reg, w: reg.acquire_lease("late", "a", 30),
                      lambda w: "taking the lease on campaign 'late'"),
    "release_lease": ("DELETE", "campaign_leases", lambda reg, w: reg.release_lease("held", "a"),
                      lambda w: "releasing the lease on campaign 'held'"),
    "add_pack": ("INSERT", "packs", lambda reg, w: reg.add_pack(make_pack(7)),
                 lambda w: f"adding pack {make_pack(7).id}"),
    "start_round": ("INSERT", "rounds", lambda reg, w: reg.start_round(w.campaign.id, 1, w.model.id),
                    lambda w: f"starting round 1 of campaign {w.campaign.id}"),
    "finish_round": ("UPDATE", "rounds", lambda reg, w: reg.finish_round(w.round.id, None),
                     lambda w: f"finishing round {w.round.id}"),
    "fail_round": ("UPDATE", "rounds", lambda reg, w: reg.fail_round(w.round.id, "x", status="interrupted"),
                   lambda w: f"marking round {w.round.id} interrupted"),
    "record_episodes": ("INSERT", "episodes",
                        lambda reg, w: reg.record_episodes(w.round.id, [make_record(w.pack, w.pack.tasks[0])]),
                        lambda w: f"recording 1 episodes of round {w.round.id}"),
    "record_wave": ("INSERT", "waves", lambda reg, w: reg.record_wave(
        w.round.id, [WaveEntry(pack_id=w.pack.id, task_id=w.pack.tasks[0].id, weight=1.0)]),
        lambda w: f"recording the wave of round {w.round.id}"),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_a_write_the_database_refuses_names_what_was_written_and_writes_nothing(reg: Registry, name: str) -> None:
    event, table, write, what = WRITES[name]
    lineage = Lineage(reg)
    _execute(reg, f"CREATE TRIGGER refuse BEFORE {event} ON {table} BEGIN SELECT RAISE(ABORT, 'refused here'); END")
    before = reg.status().counts
    with pytest.raises(RegistryError) as caught:
        write(reg, lineage)
    message = str(caught.value)
    assert message.startswith(f"{what(lineage)} was refused by sqlite:///")
    assert message.endswith("(nothing was written): refused here")
    assert reg.status().counts == before
    assert reg.round(lineage.round.id) == lineage.round


def test_a_renewal_the_database_refuses_leaves_the_holder_its_lease_until_it_lapses(reg: Registry,
                                                                                     clock: Clock) -> None:
    first = reg.acquire_lease("c", "a", 30)
    _execute(reg, "CREATE TRIGGER refuse BEFORE UPDATE ON campaign_leases BEGIN SELECT RAISE(ABORT, 'no'); END")
    clock.advance(10)
    renewed = reg.acquire_lease("c", "a", 30)
    assert (renewed.held, renewed.holder, renewed.expires_at) == (True, "a", first.expires_at)
    other = reg.acquire_lease("c", "b", 30)
    assert (other.held, other.holder) == (False, "a")


def test_a_write_that_fails_in_the_database_says_it_failed_and_writes_nothing(reg: Registry) -> None:
    model = reg.register_model("policy", "v0", kind="reference")
    round_id = reg.start_round(reg.create_campaign("c").id, 0, model.id).id
    _execute(reg, "DROP TABLE weaknesses")
    with pytest.raises(RegistryError) as caught:
        reg.record_weaknesses(round_id, [WeaknessEntry(kind="wrong_id", rank=1, score=0.5)])
    message = str(caught.value)
    assert message.startswith(f"recording weaknesses of round {round_id} failed on sqlite:///")
    assert "no such table" in message
    assert "(nothing was written)" in message


def test_models_campaign_rounds_and_episode_keys_are_told_apart_by_every_part_of_their_key(reg: Registry) -> None:
    a = reg.register_model("policy", "v1", kind="reference")
    b = reg.register_model("other", "v1", kind="trained", artifact="/m")
    assert a.id != b.id and reg.find_model("other", "v1") == b
    with pytest.raises(RegistryError) as caught:
        reg.register_model("other", "v1", kind="export", artifact="/n")
    assert str(caught.value).endswith("with different kind ('trained' != 'export'), artifact ('/m' != '/n')")
    first, second = reg.create_campaign("one"), reg.create_campaign("two")
    r1, r2 = reg.start_round(first.id, 0, a.id), reg.start_round(second.id, 0, b.id)
    assert r1.id != r2.id and reg.rounds(second.id) == [r2]
    pack = make_pack(0)
    reg.add_pack(pack)
    reg.record_episodes(r1.id, records_for(pack, 3))
    assert reg.finished_episode_keys(r2.id) == set()
    assert len(reg.finished_episode_keys(r1.id)) == 3


def test_more_episodes_than_one_insert_chunk_are_all_counted(reg: Registry) -> None:
    model = reg.register_model("policy", "v0", kind="reference")
    round_id = reg.start_round(reg.create_campaign("c").id, 0, model.id).id
    pack = make_pack(0)
    reg.add_pack(pack)
    inserts: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if statement.startswith("INSERT INTO episodes"):
            inserts.append(statement)

    event.listen(Engine, "before_cursor_execute", count)
    try:
        assert reg.record_episodes(round_id, records_for(pack, 1500)) == 1500
    finally:
        event.remove(Engine, "before_cursor_execute", count)
    assert 1 <= len(inserts) <= 2, f"{len(inserts)} INSERT statements for 1,500 episodes"
    assert reg.record_episodes(round_id, records_for(pack, 1600)) == 100


def test_episodes_of_unregistered_tasks_are_refused_naming_five_of_them(reg: Registry) -> None:
    model = reg.register_model("policy", "v0", kind="reference")
    round_id = reg.start_round(reg.create_campaign("c").id, 0, model.id).id
    ghost = make_pack(3, n_train=6, n_heldout=0)
    with pytest.raises(RegistryError) as caught:
        reg.record_episodes(round_id, records_for(ghost, 6))
    shown = ", ".join(f"{ghost.id[:12]}/{t.id}" for t in ghost.tasks[:5])
    assert str(caught.value) == (f"round {round_id}: 6 episode task(s) are not registered ({shown}); add their "
                                 "packs first (nothing was written)")


def test_recording_a_wave_again_leaves_no_entry_of_the_old_one(reg: Registry) -> None:
    model = reg.register_model("policy", "v0", kind="reference")
    round_id = reg.start_round(reg.create_campaign("c").id, 0, model.id).id
    pack = make_pack(0)
    reg.add_pack(pack)
    entries = [WaveEntry(pack_id=pack.id, task_id=t.id, weight=1.0) for t in pack.tasks]
    reg.record_wave(round_id, entries)
    reg.record_wave(round_id, entries[:2])
    counts = reg.status().counts
    assert (counts["waves"], counts["wave_entries"]) == (1, 2)
