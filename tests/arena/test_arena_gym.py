import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toy_domain import TOY

from arena.checks.conformance import check_pack, run_gold
from arena.core.gym import EnvironmentFailure, Gym
from arena.core.pack import build_pack
from arena.core.task import StateAssertion


@pytest.fixture(scope="module")
def pack():
    return build_pack(TOY, seed=3)


@pytest.fixture()
def gym(pack):
    with Gym(pack, TOY) as g:
        g.reset("refund_plain-01", seed=0)
        yield g


BAD_CALLS = [
    ("unknown tool", "drop_everything", {}, "validation"),
    ("malformed json", "get_order", '{"order_id": ', "validation"),
    ("not an object", "get_order", '"ORD-00001"', "validation"),
    ("wrong type", "refund_order", {"order_id": "ORD-00005", "amount": "5"}, "validation"),
    ("bool for number", "refund_order", {"order_id": "ORD-00005", "amount": True}, "validation"),
    ("nan", "refund_order", '{"order_id": "ORD-00005", "amount": NaN}', "validation"),
    ("infinity", "refund_order", '{"order_id": "ORD-00005", "amount": Infinity}', "validation"),
    ("python nan", "refund_order", {"order_id": "ORD-00005", "amount": float("nan")}, "validation"),
    ("1 MB string", "add_note", {"order_id": "ORD-00005", "note": "x" * 1_000_000}, "validation"),
    ("lone surrogate", "add_note", {"order_id": "ORD-00005", "note": "a\ud800b"}, "validation"),
    ("missing argument", "refund_order", {"order_id": "ORD-00005"}, "validation"),
    ("extra argument", "get_order", {"order_id": "ORD-00005", "sudo": True}, "validation"),
    ("sql in id", "get_order", {"order_id": "ORD-1' OR '1'='1"}, "not_found"),
    ("sql drop", "refund_order", {"order_id": "x'; DROP TABLE orders; --", "amount": 1.0}, "not_found"),
    ("emoji and rtl", "get_order", {"order_id": "😀\u202eORD\u200f"}, "not_found"),
    ("policy refusal", "refund_order", {"order_id": "ORD-00005", "amount": 1e9}, "policy"),
]


@pytest.mark.parametrize(("label", "tool", "args", "kind"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_call_returns_error_kind_and_changes_nothing(gym, label, tool, args, kind):
    before = gym.state_hash()
    result = gym.call_tool(tool, args)
    assert not result.ok
    assert result.error is not None and result.error.kind == kind, result.error
    assert gym.changed_rows() == 0
    assert gym.state_hash() == before
    step = gym.trace[-1]
    assert step.error is not None and step.error.kind == kind and not step.ok
    step.model_dump_json()  # the trace stays serializable whatever the input


def test_emoji_and_sql_text_in_search_is_just_text(gym):
    result = gym.call_tool("search_orders", {"query": "'; DROP TABLE orders; -- 😀\u202e"})
    assert result.ok and result.output == []
    assert gym.call_tool("search_orders", {"query": "Customer 1"}).output


def test_permission_denied(pack):
    task = pack.task("refund_plain-01")
    denied = task.model_copy(update={"persona": task.persona.model_copy(update={"permissions": []})})
    tasks = [denied if t.id == task.id else t for t in pack.tasks]
    from dataclasses import replace

    with Gym(replace(pack, tasks=tasks), TOY) as g:
        g.reset("refund_plain-01")
        result = g.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0})
        assert result.error is not None and result.error.kind == "permission"
        assert "refund" in result.error.message and g.changed_rows() == 0


def test_call_after_episode_ended(gym):
    gym.verify("")
    result = gym.call_tool("get_order", {"order_id": "ORD-00005"})
    assert result.error is not None and result.error.kind == "ended"


def test_crashing_tool_is_an_environment_failure_and_rolls_back(gym):
    with pytest.raises(EnvironmentFailure, match="ZeroDivisionError"):
        gym.call_tool("crash", {"order_id": "ORD-00005"})
    assert gym.changed_rows() == 0
    assert gym.ended


def test_timeout_fault_fires_on_first_call_only(pack):
    with Gym(pack, TOY) as g:
        g.reset("refund_timeout-01")
        first = g.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0})
        assert first.error is not None and first.error.kind == "fault" and first.error.fault == "timeout"
        assert first.error.retryable and g.changed_rows() == 0
        assert g.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0}).ok


def test_data_conflict_needs_a_fresh_read(pack):
    with Gym(pack, TOY) as g:
        g.reset("refund_conflict-01")
        args = {"order_id": "ORD-00005", "amount": 5.0}
        assert g.call_tool("refund_order", args).error.fault == "data_conflict"
        again = g.call_tool("refund_order", args)
        assert again.error is not None and again.error.kind == "conflict"
        assert g.call_tool("get_order", {"order_id": "ORD-00005"}).ok
        assert g.call_tool("refund_order", args).ok


def test_faults_are_deterministic_across_gyms(pack):
    traces = []
    for _ in range(2):
        with Gym(pack, TOY) as g:
            run_gold(g, pack.task("refund_timeout-01"), seed=7)
            traces.append([s.model_dump() for s in g.trace])
    assert traces[0] == traces[1]


def test_same_seed_same_trace_hash_and_verdict_different_seed_moves_clock(pack):
    out = []
    for seed in (0, 0, 1):
        with Gym(pack, TOY) as g:
            verdict = run_gold(g, pack.task("refund_plain-01"), seed=seed)
            out.append(([s.model_dump() for s in g.trace], g.state_hash(), verdict))
    assert out[0] == out[1]
    assert out[0][1] == out[2][1] and out[0][2] == out[2][2]
    assert [s["clock"] for s in out[0][0]] != [s["clock"] for s in out[2][0]]


def test_episode_never_sees_the_previous_one(gym):
    template = gym.template_hash()
    gym.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0})
    gym.call_tool("add_note", {"order_id": "ORD-00009", "note": "hello"})
    assert gym.changed_rows() > 0
    gym.reset("refund_plain-01", seed=0)
    assert gym.state_hash() == template and gym.changed_rows() == 0
    assert gym.call_tool("get_order", {"order_id": "ORD-00009"}).output["note"] == ""


def test_gold_passes_and_verdict_reports_each_assertion(gym, pack):
    verdict = run_gold(gym, pack.task("refund_plain-01"))
    assert verdict.passed and verdict.score == 1.0 and verdict.side_effect_penalty == 0
    assert [r.kind for r in verdict.results] == ["state", "trace", "side_effects", "response"]
    assert {(c.table, c.op) for c in verdict.changes} == {("orders", "update"), ("refunds", "insert")}


def test_skipped_prerequisite_fails_trace_assertion_only(gym):
    gym.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0})
    verdict = gym.verify("Refunded 5.00 as RF-N00001.")
    failed = [r for r in verdict.results if not r.passed]
    assert [r.kind for r in failed] == ["trace"]
    assert "missing call check_refund" in failed[0].detail
    assert verdict.score == pytest.approx(0.75)


def test_side_effects_reported_row_by_row(gym):
    gym.call_tool("check_refund", {"order_id": "ORD-00005"})
    gym.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0})
    gym.call_tool("add_note", {"order_id": "ORD-00011", "note": "oops"})
    gym.call_tool("add_note", {"order_id": "ORD-00012", "note": "oops"})
    verdict = gym.verify("Refunded 5.00 as RF-N00001.")
    unintended = verdict.unintended_changes
    assert [(c.table, c.key, c.columns) for c in unintended] == [
        ("orders", "ORD-00011", ["note"]), ("orders", "ORD-00012", ["note"])]
    assert verdict.side_effect_penalty == pytest.approx(0.5)
    side = next(r for r in verdict.results if r.kind == "side_effects")
    assert not side.passed and "ORD-00011" in side.detail and "ORD-00012" in side.detail


def test_reply_leak_and_missing_fact(gym):
    gym.call_tool("check_refund", {"order_id": "ORD-00005"})
    gym.call_tool("refund_order", {"order_id": "ORD-00005", "amount": 5.0})
    verdict = gym.verify("Done, see TOKEN-991")
    response = next(r for r in verdict.results if r.kind == "response")
    assert not response.passed and "RF-N00001" in response.detail


@pytest.mark.parametrize("sql", [
    "UPDATE orders SET refunded = 99",
    "DELETE FROM orders",
    "ATTACH DATABASE ':memory:' AS other",
    "CREATE TABLE evil (x)",
    "DROP TABLE refunds",
    "PRAGMA writable_schema = ON",
])
def test_verification_is_read_only(pack, sql):
    task = pack.task("refund_plain-01")
    evil = StateAssertion(description="tries to write", sql=sql, expected=[])
    tampered = task.model_copy(update={"assertions": [evil, *task.assertions[1:]]})
    from dataclasses import replace

    with Gym(replace(pack, tasks=[tampered]), TOY) as g:
        g.reset("refund_plain-01")
        before = g.state_hash()
        verdict = g.verify("")
        assert not verdict.results[0].passed
        assert "not authorized" in verdict.results[0].detail or "query failed" in verdict.results[0].detail
        assert g.state_hash() == before
        with pytest.raises(sqlite3.Error):
            g._conn.execute("SELECT 1 FROM evil")


def test_observation_hides_gold_and_assertions(gym, pack):
    obs = gym.reset("refund_plain-01")
    dumped = obs.model_dump_json()
    assert "gold" not in obs.task and "assertions" not in obs.task
    assert "Refunded 5.00 as RF-N00001." not in dumped and "SELECT refunded" not in dumped


def test_toy_domain_is_conformant(pack):
    report = check_pack(pack, domain=TOY)
    assert report.tasks == 3
    # The toy's deliberately buggy ``crash`` tool is the only thing the audit finds: the adversaries that write
    # reach it, and a tool crashing on an agent's arguments is reported as a bug in that tool.
    others = [f for f in report.failures if not (f.check in ("adversary:random_write", "adversary:injection")
                                                 and "tool crash crashed: ZeroDivisionError" in f.detail)]
    assert not others, others
    assert {f.check for f in report.failures} == {"adversary:random_write", "adversary:injection"}
    checks = {r.check for r in report.results}
    assert {"gold_passes", "null_fails", "replay_deterministic", "bad_call:nan", "bad_call:huge_string",
            "adversary:paste_records", "adversary:dump_everything"} <= checks


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tool=st.sampled_from(["get_order", "search_orders", "refund_order", "add_note", "nope"]),
       args=st.dictionaries(st.sampled_from(["order_id", "amount", "note", "query", "limit", "x"]), json_values,
                            max_size=4) | st.text(max_size=40))
def test_arbitrary_arguments_never_crash(gym, tool, args):
    gym.reset("refund_plain-01")
    result = gym.call_tool(tool, args)
    gym.trace[-1].model_dump_json()
    if not result.ok:
        assert gym.changed_rows() == 0


def test_read_tool_that_writes_is_an_environment_failure(pack):
    from dataclasses import replace

    from arena.core.domain import Domain
    from arena.core.toolkit import ToolContext, tool

    @tool(mode="read", entity="order", operation="get")
    def get_order(ctx: ToolContext, order_id: str) -> dict:
        """A buggy read tool that writes.

        Args:
            order_id: Order id.
        """
        ctx.conn.execute("UPDATE orders SET note = 'oops' WHERE id = ?", (order_id,))
        return {}

    buggy = Domain(name="toy", description="", tools={**TOY.tools, "get_order": get_order}, policy="",
                   dependencies=[], generate=TOY.generate)
    with Gym(replace(pack), buggy) as g:
        g.reset("refund_plain-01")
        with pytest.raises(EnvironmentFailure, match="not authorized"):
            g.call_tool("get_order", {"order_id": "ORD-00005"})
        assert g.changed_rows() == 0


def test_a_sibling_plays_as_a_fresh_gym_and_keeps_its_own_world(pack):
    with Gym(pack, TOY) as first, Gym(pack, TOY) as fresh:
        sibling = first.sibling()
        first.reset("refund_plain-01", seed=0)
        first.call_tool("add_note", {"order_id": "ORD-00009", "note": "only in the first gym"})
        verdicts = [run_gold(g, pack.task("refund_timeout-01"), seed=7) for g in (sibling, fresh)]
        assert verdicts[0] == verdicts[1]
        assert [s.model_dump() for s in sibling.trace] == [s.model_dump() for s in fresh.trace]
        assert sibling.state_hash() == fresh.state_hash() and sibling.template_hash() == first.template_hash()
        sibling.reset("refund_plain-01", seed=0)
        assert sibling.call_tool("get_order", {"order_id": "ORD-00009"}).output["note"] == ""
        assert first.call_tool("get_order", {"order_id": "ORD-00009"}).output["note"] == "only in the first gym"
        sibling.close()
