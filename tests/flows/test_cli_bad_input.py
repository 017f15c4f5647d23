"""Bad input to the command line gets one clear line naming the bad value and where it came from."""

import json

import pytest
from typer.testing import CliRunner

from arena.agents.scripted_server import ReplyCue, ScriptedModelServer
from arena.core.episode import EpisodeRecord
from flows.cli import app

runner = CliRunner()


def _one_line_error(result, *needles):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    flat = " ".join(result.output.replace("│", " ").split())  # rich wraps the error box
    for needle in needles:
        assert needle in flat, result.output


def test_eval_with_a_model_replying_lone_surrogates_writes_every_episode(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-scripted")
    out = tmp_path / "episodes.jsonl"
    with ScriptedModelServer([], default=ReplyCue("I looked into it \ud800 and it is done.")) as server:
        result = runner.invoke(app, ["eval", "--model", "openai/scripted", "--api-base", server.base_url + "/v1",
                                     "--domain", "procurement", "--k", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = [EpisodeRecord.model_validate_json(line) for line in out.read_text().splitlines()]
    assert records and all(not r.invalid and r.verdict is not None for r in records)
    assert all(r.reply == "I looked into it \ufffd and it is done." for r in records)
    assert [p.name for p in tmp_path.iterdir()] == ["episodes.jsonl"]  # no temp file left behind


@pytest.mark.parametrize(("content", "needle"), [
    (None, "no such reference policy parameter file"),
    ("{not json", "not a JSON reference policy parameter file"),
    ("[1, 2]", "must be a JSON object"),
    (b"\xff\xfe\x00binary", "not a JSON reference policy parameter file"),
])
def test_eval_params_missing_or_not_json(tmp_path, content, needle):
    path = tmp_path / "params.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    result = runner.invoke(app, ["eval", "--params", str(path), "--domain", "helpdesk", "--out",
                                 str(tmp_path / "e.jsonl")])
    _one_line_error(result, needle, "--params")


def test_eval_out_is_a_folder(tmp_path):
    result = runner.invoke(app, ["eval", "--domain", "helpdesk", "--out", str(tmp_path)])
    _one_line_error(result, "cannot write episodes there", "--out")
    json.dumps(result.output)


@pytest.mark.parametrize(("content", "needle"), [
    (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe binary", "is not UTF-8 text"),
    (b'{"a": ' + b"[" * 200_000 + b"]" * 200_000 + b"}\n", "nested too deep"),
])
def test_diagnose_binary_or_deeply_nested_input(tmp_path, content, needle):
    path = tmp_path / "episodes.jsonl"
    path.write_bytes(content)
    result = runner.invoke(app, ["diagnose", "--episodes", str(path), "--out", str(tmp_path / "w.json")])
    _one_line_error(result, needle, "--episodes")


def test_diagnose_a_folder(tmp_path):
    result = runner.invoke(app, ["diagnose", "--episodes", str(tmp_path), "--out", str(tmp_path / "w.json")])
    _one_line_error(result, "is a folder, not an episodes JSONL file")


def test_home_set_to_a_file(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.write_text("not a folder")
    monkeypatch.setenv("GYMLOOP_HOME", str(home))
    result = runner.invoke(app, ["round", "--campaign", "c"])
    _one_line_error(result, "setting 'home' (environment variable GYMLOOP_HOME)", "is a file")


@pytest.mark.parametrize(("args", "needle"), [
    (["--variants", "100000"], "--variants 100000"),
    (["--tasks", "0"], "--tasks 0"),
    (["--complexity", "9"], "--complexity 9"),
])
def test_factory_request_out_of_range_option(args, needle):
    result = runner.invoke(app, ["factory", "request", "helpdesk", *args])
    _one_line_error(result, "bad option", needle)


@pytest.mark.parametrize("name", ["../..", "..", ".", "a/b", ""])
def test_campaign_name_that_would_escape_its_folder(name):
    result = runner.invoke(app, ["round", "--campaign", name])
    _one_line_error(result, "bad campaign name", "--campaign")


def test_registry_error_at_start(tmp_path, monkeypatch):
    monkeypatch.setenv("GYMLOOP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GYMLOOP_REGISTRY_URL", "nosuchdb://nowhere/x")
    result = runner.invoke(app, ["round", "--campaign", "c"])
    _one_line_error(result, "registry error", "nosuchdb://nowhere/x")


def test_pack_task_file_nested_very_deep(tmp_path):
    from arena.core.pack import build_pack, write_pack

    folder = write_pack(build_pack("procurement", seed=0), tmp_path / "pack")
    task_file = next((folder / "tasks").glob("*.json"))
    task_file.write_text('{"id": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = runner.invoke(app, ["gyms", "check", str(folder)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "JSON nested too deep" in " ".join(result.output.split()) and task_file.name in result.output
