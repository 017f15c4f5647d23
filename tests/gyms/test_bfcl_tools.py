"""The BFCL gym's own functions against BFCL's classes: the same results and the same state on BFCL's ground truth."""

from __future__ import annotations

import json
import random
import sqlite3
from datetime import datetime
from typing import Any

import pytest

from arena.core.task import Persona
from arena.core.toolkit import ToolContext, ToolError
from arena.gyms.bfcl.calls import CallSyntaxError, parse_call, render_call
from arena.gyms.bfcl.data import CATEGORIES, load_entries
from arena.gyms.bfcl.world import CLASS_OF, TOOLS, build_world, class_state
from tests.gyms.bfcl_support import bfcl_eval  # noqa: F401  (skips the module without BFCL's package)

pytestmark = pytest.mark.xdist_group("bfcl")


def _bfcl_tree(node: Any) -> Any:
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.gorilla_file_system import File

    if isinstance(node, File):
        return {"file": node.name, "content": node.content}
    return {"directory": node.name, "contents": {k: _bfcl_tree(v) for k, v in node.contents.items()}}


def _bfcl_state(instance: Any) -> dict[str, Any]:
    state = {k: v for k, v in vars(instance).items() if not k.startswith("_")}
    if "root" in state:
        state["root"] = _bfcl_tree(state["root"])
    return state


def _shown(output: Any) -> str:
    """A result the way BFCL's runner writes it (a dict as JSON, anything else with ``str``)."""
    return json.dumps(output) if isinstance(output, dict) else str(output)


def _query(conn: sqlite3.Connection) -> Any:
    return lambda sql, params: conn.execute(sql, params).fetchall()


def _ours(conn: sqlite3.Connection, task: str, name: str, arguments: dict[str, Any]) -> str:
    ctx = ToolContext(conn=conn, now=datetime(2024, 9, 1, 10, 30), rng=random.Random(0),
                      persona=Persona(name="Assistant", role="assistant"), task_id=task)
    tool = TOOLS[name]
    kwargs = dict(tool.args_model.model_validate(arguments).__dict__)
    conn.execute("SAVEPOINT call")
    try:
        output = tool.fn(ctx, **kwargs)
    except ToolError as exc:
        conn.execute("ROLLBACK TO call")
        return "Error during execution: " + exc.message
    finally:
        conn.execute("RELEASE call")
    return _shown(output)


def test_every_ground_truth_call_returns_bfcls_result_and_leaves_bfcls_state(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    calls = turns = 0
    differences: list[str] = []
    try:
        for category in CATEGORIES:
            entries = load_entries(category)
            conn = build_world((f"{category}-{e.index:03d}", e) for e in entries)
            for entry in entries:
                task = f"{category}-{entry.index:03d}"
                name = f"gymtest_{task.replace('-', '_')}"
                for turn, gold in enumerate(entry.gold):
                    results, instances = multi_turn_utils.execute_multi_turn_func_call(
                        gold, entry.initial_config, entry.involved_classes, name, entry.id,
                        long_context=category == "long_context", is_evaL_run=True)
                    for text, bfcl_result in zip(gold, results, strict=True):
                        calls += 1
                        tool = text.split("(", 1)[0]
                        ours = _ours(conn, task, *parse_call(text, list(TOOLS[tool].args_model.model_fields)))
                        if tool == "logarithm":  # BFCL shows its mpf as mpf('digits'); the gym gives the digits
                            bfcl_result = bfcl_result.replace("{'result': mpf('", '{"result": "').replace("')}", '"}')
                        if tool == "get_watchlist":  # BFCL's long-context watch list ends with ``...``, kept as text
                            bfcl_result = bfcl_result.replace(", Ellipsis]", ", '...']")
                        if ours != bfcl_result:
                            differences.append(f"{task} turn {turn}: {text}: {bfcl_result[:120]} != {ours[:120]}")
                    for cls, instance in instances.items():
                        turns += 1
                        if _bfcl_state(instance) != class_state(_query(conn), task, cls):
                            differences.append(f"{task} turn {turn}: {cls} state differs")
                for key in [k for k in vars(multi_turn_utils) if k.startswith(name)]:
                    delattr(multi_turn_utils, key)
    finally:
        time.tzset()
    assert calls > 4000 and turns > 3000
    assert differences == []


def test_calls_parse_by_keyword_and_position_and_render_as_bfcl_decodes_them() -> None:
    assert parse_call("sort('report.txt')", ["file_name"]) == ("sort", {"file_name": "report.txt"})
    name, args = parse_call("lockDoors(unlock=False, door=['driver', 'passenger'])", ["unlock", "door"])
    assert (name, args) == ("lockDoors", {"unlock": False, "door": ["driver", "passenger"]})
    assert render_call(name, args) == "lockDoors(unlock=False,door=['driver', 'passenger'])"
    for bad in ("os.system('x')", "cd(folder=open('x'))", "cd(**kw)", "not a call", "sort('a', 'b')"):
        with pytest.raises(CallSyntaxError):
            parse_call(bad, ["file_name"])


def test_every_tool_belongs_to_one_class_and_has_a_documented_schema() -> None:
    from arena.gyms.bfcl.data import function_docs

    docs = function_docs()
    assert set(TOOLS) == set(docs)
    for name, tool in TOOLS.items():
        assert name in CLASS_OF and tool.spec.description, name
        ours = set(tool.spec.parameters.get("properties", {}))
        theirs = set(docs[name]["parameters"].get("properties", {}))
        assert ours == theirs, (name, ours ^ theirs)
        assert set(tool.spec.parameters.get("required", [])) == set(docs[name]["parameters"].get("required", [])), name
