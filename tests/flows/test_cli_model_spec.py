"""Through the ``gymloop`` command (subprocesses): one model spec, one way of reading settings, masked endpoints.

- ``eval`` reads flags, then ``GYMLOOP_*``, then gymloop.toml, and refuses bad values with the line ``round`` gives;
- every model name gymloop prints (rounds, ``campaigns``, episodes, ``eval``) is accepted back as ``--model``;
- without a client flag an OpenAI-compatible endpoint takes the ``openai`` path, said once on stderr;
- a password in ``api_base`` reaches no file, registry row, MLflow store, stdout or stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from arena.agents.scripted_server import ReplyCue, ScriptedModelServer
from arena.core.episode import EpisodeRecord
from arena.core.redact import mask_url
from factory_client import HttpFactoryClient, VariantRequest

PASSWORD = "pw-BOUNDARY-90c4d2"
SMALL_ROUND = {"domains": ["procurement"], "variants_per_round": 0, "eval_k": 1, "wave_budget": 24, "train_k": 2,
               "batch_size": 40}


def _env(home: Path, tmp_path: Path, api_url: str | None = None, **settings: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GYMLOOP_", "OPENAI_", "HOSTED_VLLM_", "PREFECT_API_URL"))}
    env.update({"GYMLOOP_HOME": str(home), "PREFECT_HOME": str(tmp_path / "prefect-child"), "COLUMNS": "200",
                "PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "600"})
    if api_url:
        env["PREFECT_API_URL"] = api_url  # the session's Prefect server: no temporary server per command
    env.update({f"GYMLOOP_{k.upper()}": v if isinstance(v, str) else json.dumps(v) for k, v in settings.items()})
    return env


def _gymloop(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from flows.cli import app; app()", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=900)


def _api_url() -> str:
    from prefect.settings import get_current_settings

    return str(get_current_settings().api.url)


def _episodes(path: Path) -> list[EpisodeRecord]:
    return [EpisodeRecord.model_validate_json(line) for line in path.read_text().splitlines()]


def _one_line(run: subprocess.CompletedProcess[str], start: str) -> str:
    lines = [line for line in (run.stdout + run.stderr).splitlines() if line.startswith(start)]
    assert run.returncode == 2 and len(lines) == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Traceback" not in run.stdout + run.stderr
    return lines[0]


def test_eval_reads_flags_then_environment_then_gymloop_toml(gymloop_home, tmp_path):
    (tmp_path / "gymloop.toml").write_text('eval_k = 3\neval_seeds = [7]\ndomains = ["tracker"]\n')
    env = _env(gymloop_home, tmp_path, domains=["procurement"], eval_k="2")
    done = _gymloop(["eval", "--json", "--out", "a.jsonl"], env, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    records = _episodes(tmp_path / "a.jsonl")
    assert {r.domain for r in records} == {"procurement"}  # the environment over the file
    assert {r.attempt for r in records} == {0, 1} and {r.seed for r in records} == {7}  # file where nothing else
    assert json.loads(done.stdout)["k"] == 2
    done = _gymloop(["eval", "--k", "1", "--seed", "4", "--out", "b.jsonl"], env, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    records = _episodes(tmp_path / "b.jsonl")
    assert {r.attempt for r in records} == {0} and {r.seed for r in records} == {4}  # flags over both


@pytest.mark.parametrize(("where", "content", "needles"), [
    ("file", "eval_k = 0\n", ["setting 'eval_k' (file gymloop.toml)", "greater than or equal to 1", "got 0"]),
    ("env", "grpc", ["setting 'model_client' (environment variable GYMLOOP_MODEL_CLIENT)", "got 'grpc'"]),
    ("file", 'model = "transformers:"\n', ["setting 'model' (file gymloop.toml)", "names no checkpoint folder"]),
    ("file", 'wave_budgett = 10\n', ["setting 'wave_budgett' (file gymloop.toml)", "did you mean 'wave_budget'"]),
    ("file", '[trl]\nsft_skip_mastred = true\n', ["setting 'trl.sft_skip_mastred' (file gymloop.toml)",
                                                 "did you mean 'sft_skip_mastered'"]),
])
def test_eval_refuses_a_bad_setting_with_the_line_round_gives(gymloop_home, tmp_path, where, content, needles):
    settings = {"model_client": content} if where == "env" else {}
    if where == "file":
        (tmp_path / "gymloop.toml").write_text(content)
    env = _env(gymloop_home, tmp_path, **settings)
    lines = [_one_line(_gymloop([command, *args], env, tmp_path), "bad setting:")
             for command, args in (("eval", ["--out", "e.jsonl"]), ("round", ["--campaign", "c"]))]
    assert lines[0] == lines[1]
    assert all(needle in lines[0] for needle in needles), lines[0]
    assert not (tmp_path / "e.jsonl").exists()


@pytest.mark.parametrize("command", [  # one of each way a command reads its settings
    ["eval"], ["report", "c"], ["diagnose", "--round", "1"], ["factory", "serve"], ["gyms", "serve", "helpdesk"],
])
def test_every_command_refuses_a_bad_setting_with_the_same_line(gymloop_home, tmp_path, command):
    (tmp_path / "gymloop.toml").write_text('eval_k = 0\n')
    line = _one_line(_gymloop(command, _env(gymloop_home, tmp_path), tmp_path), "bad setting:")
    assert line == ("bad setting: setting 'eval_k' (file gymloop.toml): Input should be greater than or equal to 1: "
                    "got 0"), line


def test_eval_names_a_bad_flag_as_the_option_it_came_from(gymloop_home, tmp_path):
    line = _one_line(_gymloop(["eval", "--k", "0", "--client", "grpc"], _env(gymloop_home, tmp_path), tmp_path),
                     "bad setting:")
    assert "setting 'eval_k' (option --k)" in line and "setting 'model_client' (option --client)" in line


def test_a_model_in_gymloop_toml_is_the_model_eval_plays(gymloop_home, tmp_path):
    (tmp_path / "gymloop.toml").write_text('model = "openai/gpt-4o-mini"\n')
    line = _one_line(_gymloop(["eval", "--out", "e.jsonl"], _env(gymloop_home, tmp_path), tmp_path),
                     "preflight failed:")
    assert "model openai/gpt-4o-mini" in line and "missing key: set OPENAI_API_KEY" in line
    assert not (tmp_path / "e.jsonl").exists()


def test_an_llm_endpoint_takes_the_openai_path_by_default_and_its_password_stays_masked(gymloop_home, tmp_path):
    with ScriptedModelServer([], default=ReplyCue("I could not do that.")) as server:
        base = server.base_url.replace("http://", f"http://gym:{PASSWORD}@") + "/v1"
        env = _env(gymloop_home, tmp_path)
        done = _gymloop(["eval", "--model", "hosted_vllm/scripted", "--api-base", base, "--domain", "procurement",
                         "--k", "1", "--json"], env, tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        shown = json.loads(done.stdout)["model"]
        assert shown == f"hosted_vllm/scripted@{mask_url(base)}" and "***" in shown
        said = [line for line in done.stderr.splitlines() if line.startswith("model client:")]
        assert len(said) == 1 and said[0].startswith("model client: openai for hosted_vllm/scripted@"), done.stderr
        records = _episodes(tmp_path / "episodes.jsonl")
        assert records and {r.model_ref for r in records} == {shown}

        again = _gymloop(["eval", "--model", shown, "--domain", "procurement", "--k", "1", "--json", "--out",
                          "again.jsonl"], {**env, "GYMLOOP_API_BASE": base}, tmp_path)
        assert again.returncode == 0, again.stderr[-2000:]
        assert json.loads(again.stdout)["model"] == shown
        masked = _one_line(_gymloop(["eval", "--model", shown, "--out", "x.jsonl"], env, tmp_path), "bad setting:")
        assert "masked endpoint" in masked and "setting 'model' (option --model)" in masked
        litellm = _gymloop(["eval", "--model", "hosted_vllm/scripted", "--api-base", base, "--client", "litellm",
                            "--domain", "procurement", "--k", "1", "--out", "l.jsonl"], env, tmp_path)
        assert litellm.returncode == 0, litellm.stderr[-2000:]
        assert "model client: litellm for hosted_vllm/scripted@" in litellm.stderr
    for run in (done, again, litellm):
        assert PASSWORD not in run.stdout + run.stderr
    for path in tmp_path.glob("*.jsonl"):
        assert PASSWORD not in path.read_text(), path


def _served_factory(env: dict[str, str], tmp_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``gymloop factory serve`` on a free loopback port, answering."""
    import httpx

    from tests.flows.conftest import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", "from flows.cli import app; app()", "factory", "serve", "--port",
                             str(port)], env=env, cwd=tmp_path, stdout=(tmp_path / "factory.log").open("ab"),
                            stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            httpx.get(f"{url}/v1/requests/none", timeout=5)
            return proc, url
        except httpx.TransportError:  # not listening yet
            time.sleep(1)
    raise AssertionError((tmp_path / "factory.log").read_text()[-2000:])


def _factory(name: str, env: dict[str, str], cwd: Path, url: str | None = None) -> subprocess.CompletedProcess[str]:
    return _gymloop(["factory", "request", "procurement", "--variants", "1", "--tasks", "1", "--baseline", name,
                     *(["--url", url] if url else [])], env, cwd)


@pytest.mark.timeout(1500)
def test_every_model_name_gymloop_prints_is_accepted_back(prefect_harness, gymloop_home, tmp_path):
    env = _env(gymloop_home, tmp_path, _api_url(), **SMALL_ROUND)
    first = _gymloop(["eval", "--domain", "procurement", "--k", "1", "--json", "--out", "ref.jsonl"], env, tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    rounds = [_gymloop(["round", "--campaign", "back", "--json"], env, tmp_path) for _ in range(2)]
    assert all(r.returncode == 0 for r in rounds), rounds[-1].stderr[-3000:]
    summaries = [json.loads(r.stdout)["rounds"][0] for r in rounds]
    listed = _gymloop(["campaigns", "--json"], env, tmp_path)
    assert listed.returncode == 0, listed.stderr[-2000:]
    printed = {json.loads(first.stdout)["model"], _episodes(tmp_path / "ref.jsonl")[0].model_ref,
               *(s[key] for s in summaries for key in ("model_in", "model_out")),
               *(c["model_out"] for c in json.loads(listed.stdout))}
    assert len(printed) == 3 and all(name.startswith("reference@v") for name in printed), printed
    expert = _gymloop(["eval", "--model", "reference-expert", "--domain", "procurement", "--k", "1", "--json",
                       "--out", "expert.jsonl"], env, tmp_path)
    assert expert.returncode == 0, expert.stderr[-2000:]
    builtin = json.loads(expert.stdout)["model"]  # a built-in policy prints as its parameters' name
    assert builtin.startswith("reference-expert@v0:"), builtin
    episode = _episodes(tmp_path / "ref.jsonl")[0].episode_id
    proc, url = _served_factory(env, tmp_path)
    try:
        for name in sorted(printed | {builtin}):
            again = _gymloop(["eval", "--model", name, "--domain", "procurement", "--k", "1", "--json", "--out",
                              "again.jsonl"], env, tmp_path)
            assert again.returncode == 0, f"{name}: {again.stdout[-1000:]} {again.stderr[-2000:]}"
            assert json.loads(again.stdout)["model"] == name
            assert {r.model_ref for r in _episodes(tmp_path / "again.jsonl")} == {name}
            requested = _factory(name, env, tmp_path)  # the embedded factory
            assert requested.returncode == 0, f"{name}: {requested.stdout[-1000:]} {requested.stderr[-2000:]}"
            assert "candidate tasks accepted" in requested.stdout
            served = HttpFactoryClient(url).request(VariantRequest(  # the served factory, as any client asks it
                domain="procurement", targets=[], variants=1, tasks_per_variant=1, baseline_model=name), timeout=600)
            assert served.gate_report.candidates >= 1, name
        for name in sorted(printed - {json.loads(first.stdout)["model"]}):
            shown = _gymloop(["episode", episode, "--model", name, "--json"], env, tmp_path)
            assert shown.returncode == 0, f"{name}: {shown.stderr[-2000:]}"
            assert {p["model"] for p in json.loads(shown.stdout)["plays"]} == {name}
        endpoint = _factory("hosted_vllm/m@http://127.0.0.1:9/v1", env, tmp_path, url)  # through the command line
        assert endpoint.returncode == 1 and "is not a model this factory knows" in endpoint.stdout + endpoint.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    started = _gymloop(["round", "--campaign", "from-v1", "--model", summaries[0]["model_out"], "--json"], env,
                       tmp_path)
    assert started.returncode == 0, started.stderr[-3000:]
    assert json.loads(started.stdout)["rounds"][0]["model_in"] == summaries[0]["model_out"]
    campaign = _gymloop(["campaign", "--name", "from-expert", "--model", builtin, "--rounds", "1", "--json"], env,
                        tmp_path)
    assert campaign.returncode == 0, campaign.stderr[-3000:]
    assert json.loads(campaign.stdout)["rounds"][0]["model_in"] == builtin
    unknown = _one_line(_gymloop(["eval", "--model", "reference@v9:0123456789abcdef"], env, tmp_path),
                        "preflight failed:")
    assert "reference@v9:0123456789abcdef" in unknown and "is not registered" in unknown
    bad = _one_line(_gymloop(["eval", "--model", "reference-failure:bogus"], env, tmp_path), "bad setting:")
    assert "unknown failure mode 'bogus'" in bad and "setting 'model' (option --model)" in bad


@pytest.mark.timeout(900)
def test_an_llm_round_stores_its_endpoint_masked_and_its_printed_names_play_again(prefect_harness, gymloop_home,
                                                                                  tmp_path):
    with ScriptedModelServer([], default=ReplyCue("done")) as server:
        base = server.base_url.replace("http://", f"http://gym:{PASSWORD}@") + "/v1"
        env = _env(gymloop_home, tmp_path, _api_url(), **SMALL_ROUND, model="hosted_vllm/scripted", api_base=base,
                   trainer="export")
        done = _gymloop(["round", "--campaign", "llm", "--json"], env, tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        summary = json.loads(done.stdout)["rounds"][0]
        assert summary["model_in"] == "hosted_vllm/scripted@v0"
        report = _gymloop(["report", "llm"], env, tmp_path)
        assert report.returncode == 0, report.stderr[-2000:]
        again = _gymloop(["eval", "--model", summary["model_in"], "--domain", "procurement", "--k", "1", "--json",
                          "--out", "again.jsonl"], env, tmp_path)
        assert again.returncode == 0, again.stderr[-2000:]
        assert {r.model_ref for r in _episodes(tmp_path / "again.jsonl")} == {
            f"hosted_vllm/scripted@{mask_url(base)}"}
    from registry import Registry

    registry = Registry(f"sqlite:///{gymloop_home / 'registry.db'}")
    round_id = registry.rounds(registry.campaign("llm").id)[0].id
    stored = {r.model_ref for r in registry.round_episodes(round_id, stage=None)}
    assert stored == {f"hosted_vllm/scripted@{mask_url(base)}"}
    leaks = [name for name, run in (("round", done), ("report", report), ("eval", again))
             if PASSWORD in run.stdout + run.stderr]
    leaks += [str(p) for p in tmp_path.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]
    assert not leaks, leaks


@pytest.mark.timeout(900)
def test_a_transformers_checkpoint_plays_eval_and_a_round_through_the_cli(prefect_harness, gymloop_home, tmp_path):
    pytest.importorskip("torch", reason="torch (gymloop[trl]) is not installed")
    pytest.importorskip("trl", reason="trl (gymloop[trl]) is not installed")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trainers"))
    from tiny_lm import build_tiny_checkpoint, corpus_for

    from arena.core.pack import build_pack

    folder = build_tiny_checkpoint(tmp_path / "tiny-helpdesk", corpus_for([build_pack("helpdesk", seed=0)]))
    env = _env(gymloop_home, tmp_path, _api_url(), local_max_new_tokens="4", local_max_steps="1",
               tasks=["refund_timeout-*", "shipment_tracking-*"])  # a train and a held-out task of each
    done = _gymloop(["eval", "--model", f"transformers:{folder}", "--domain", "helpdesk", "--k", "1", "--json"],
                    env, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["model"] == f"transformers:{folder}"
    assert {r.model_ref for r in _episodes(tmp_path / "episodes.jsonl")} == {f"transformers:{folder}"}
    missing = _one_line(_gymloop(["eval", "--model", f"transformers:{tmp_path / 'nope'}"], env, tmp_path),
                        "preflight failed:")
    assert f"transformers:{tmp_path / 'nope'}" in missing and "does not exist" in missing

    (tmp_path / "gymloop.toml").write_text(f'''model = "transformers:{folder}"
trainer = "trl"
domains = ["helpdesk"]
eval_k = 1
variants_per_round = 0
wave_budget = 4
train_k = 2
[trl]
method = "grpo"
max_steps = 1
per_device_train_batch_size = 2
num_generations = 2
max_completion_length = 8
max_tool_calling_iterations = 1
''')
    trained = _gymloop(["round", "--campaign", "trl", "--json"], env, tmp_path)
    assert trained.returncode == 0, trained.stderr[-3000:]
    summary = json.loads(trained.stdout)["rounds"][0]
    assert summary["model_in"] == "tiny-helpdesk@v0" and summary["model_out"].startswith("tiny-helpdesk@v1:")
    for name in (summary["model_in"], summary["model_out"]):
        again = _gymloop(["eval", "--model", name, "--domain", "helpdesk", "--k", "1", "--json", "--out",
                          "again.jsonl"], env, tmp_path)
        assert again.returncode == 0, f"{name}: {again.stderr[-3000:]}"
        played = {r.model_ref for r in _episodes(tmp_path / "again.jsonl")}
        assert len(played) == 1 and played.pop().startswith("transformers:")
