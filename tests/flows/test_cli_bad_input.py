"""Bad input to the command line gets one clear line naming the bad value and where it came from."""

import json

import pytest
from typer.testing import CliRunner

from arena.agents.scripted_server import ReplyCue, ScriptedModelServer
from arena.episode import EpisodeRecord
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
