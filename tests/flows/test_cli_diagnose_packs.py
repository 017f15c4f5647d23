"""``gymloop diagnose --episodes`` finds the episodes' packs and gives the flow's weaknesses."""

import json

from typer.testing import CliRunner

from arena.core.pack import build_pack, write_pack
from diagnosis import WeaknessReport, read_episodes_jsonl
from flows import steps
from flows.cli import app

runner = CliRunner(env={"COLUMNS": "250"})


def _grain(report: WeaknessReport) -> list[tuple[str, str | None, str | None, int, list[str]]]:
    return [(w.kind, w.domain, w.tool, w.count, w.example_episode_ids) for w in report.weaknesses]


def test_diagnose_episodes_from_eval_gives_the_flows_weaknesses(gymloop_home, tmp_path):
    episodes = tmp_path / "episodes.jsonl"
    done = runner.invoke(app, ["eval", "--domain", "helpdesk", "--k", "1", "--out", str(episodes)])
    assert done.exit_code == 0, done.output
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["diagnose", "--episodes", str(episodes), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "built-in gym helpdesk seed 0" in result.output and "WARNING" not in result.output
    cli = WeaknessReport.from_json(out.read_text())
    records, _ = read_episodes_jsonl(episodes)
    flow = steps.diagnose_round(records, [build_pack("helpdesk", seed=0)], None, 0, 0)
    assert cli.failures == flow.failures > 0
    assert _grain(cli) == _grain(flow)
    assert cli.tag_counts == flow.tag_counts


def test_diagnose_episodes_finds_a_packs_folder_and_warns_without_packs(gymloop_home, tmp_path):
    pack = build_pack("tracker", seed=7)
    episodes = tmp_path / "episodes.jsonl"
    record = {"episode_id": "e1", "pack_id": pack.id, "domain": "tracker", "task_id": pack.tasks[0].id,
              "split": "heldout", "category": "x", "seed": 0, "agent": "a", "model_ref": "m", "reply": "Done.",
              "verdict": {"passed": False, "score": 0.0}}
    episodes.write_text(json.dumps(record) + "\n")
    bare = runner.invoke(app, ["diagnose", "--episodes", str(episodes), "--out", str(tmp_path / "r.json")])
    assert bare.exit_code == 0, bare.output
    assert "WARNING" in bare.output and pack.id[:12] in bare.output
    write_pack(pack, tmp_path / "packs" / "one")
    found = runner.invoke(app, ["diagnose", "--episodes", str(episodes), "--packs", str(tmp_path / "packs"),
                                "--out", str(tmp_path / "r2.json")])
    assert found.exit_code == 0, found.output
    assert "--packs" in found.output and "WARNING" not in found.output
    missing = runner.invoke(app, ["diagnose", "--episodes", str(episodes), "--packs", str(tmp_path / "nope")])
    assert missing.exit_code != 0 and "nope" in missing.output
