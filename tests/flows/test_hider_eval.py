"""A model that hides the tasks it would fail behind errors of its own gains nothing in ``gymloop eval``.

The model plays the gold program on two tasks in three and fails the third: honestly, or behind one error form.
``gymloop eval`` runs as a subprocess against the scripted OpenAI-compatible server, through either client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from arena.agents.hider import MODEL_FORMS, GoldPlayer
from arena.agents.scripted_server import ScriptedModelServer
from arena.core.pack import Pack, build_pack
from arena.core.task import Task

DOMAIN = "helpdesk"


def _can(task: Task) -> bool:
    return zlib.crc32(task.id.encode()) % 3 != 0


@cache
def _pack() -> Pack:
    return build_pack(DOMAIN, seed=0)  # the gym's seed-0 pack, the one `gymloop eval` plays


def _eval(tmp_path: Path, form: str | None, client: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    player = GoldPlayer(_pack(), _can, form)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GYMLOOP_", "OPENAI_"))}
    # One retry of a server error (model_retries) keeps the infrastructure case to seconds.
    env.update({"GYMLOOP_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": "sk-scripted", "COLUMNS": "200",
                "GYMLOOP_MODEL_RETRIES": "1"})
    with ScriptedModelServer(player) as server:
        done = subprocess.run(
            [sys.executable, "-c", "from flows.cli import app; app()", "eval", "--model", "openai/hider",
             "--api-base", server.base_url + "/v1", "--client", client, "--domain", DOMAIN, "--split", "heldout",
             "--k", "1", "--max-concurrency", "4", "--json", "--out", str(tmp_path / f"{form}.jsonl"), *extra],
            env=env, capture_output=True, text=True, timeout=600, check=False)
    return done.returncode, json.loads(done.stdout), done.stderr


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    code, report, err = _eval(tmp_path_factory.mktemp("honest"), None, "openai")
    assert code == 0, err
    return report


@pytest.mark.parametrize("client", ["openai", "litellm"])
@pytest.mark.parametrize("form", MODEL_FORMS)
def test_errors_of_the_models_own_making_are_failed_episodes(tmp_path, honest, form, client):
    code, report, err = _eval(tmp_path, form, client)
    assert code == 0, err
    assert 0.3 < honest["groups"]["all"]["pass_rate"]["value"] < 1.0
    assert report["invalid"] == 0 and report["valid"] == honest["valid"]
    assert report["groups"]["all"]["pass_rate"]["value"] <= honest["groups"]["all"]["pass_rate"]["value"]
    records = [json.loads(line) for line in (tmp_path / f"{form}.jsonl").read_text().splitlines()]
    failed = [r for r in records if r["failure"]]
    assert failed and all(r["failure"]["boundary"] == "model_api" and not r["invalid"] and r["verdict"]
                          for r in failed)


def test_an_infrastructure_error_is_invalid_and_past_the_share_stops_eval_in_one_line(tmp_path, honest):
    code, report, err = _eval(tmp_path, "server_error", "openai")
    assert code == 4
    lines = [line for line in err.splitlines() if line.startswith("error:")]  # the retries log warnings before it
    assert len(lines) == 1 and "above max_invalid_share 0.2: model_api/server_error x" in lines[0], err
    overall = report["groups"]["all"]
    assert report["invalid"] > 0 and overall["invalid_causes"] == {"model_api/server_error": report["invalid"]}
    # Left out, the hidden tasks flatter the pass rate; counted as failed, it is honest play's.
    assert overall["pass_rate"]["value"] > honest["groups"]["all"]["pass_rate"]["value"]
    assert overall["pass_rate_invalid_failed"]["value"] == pytest.approx(honest["groups"]["all"]["pass_rate"]["value"])
    code, report, _ = _eval(tmp_path, "server_error", "openai", "--max-invalid-share", "0.5")
    assert code == 0 and report["error"] is None
