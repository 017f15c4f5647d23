"""``gymloop diagnose --episodes`` finds the episodes' packs and gives the flow's weaknesses."""

import json
import os
import subprocess
import sys

from typer.testing import CliRunner

from arena.core.pack import build_pack, write_pack
from diagnosis import WeaknessReport, read_episodes_jsonl, read_report
from diagnosis.tables import GRAIN_COLUMNS, KIND_COLUMNS
from flows.cli import app
from flows.weaknesses import diagnose_round

runner = CliRunner(env={"COLUMNS": "250"})


def _grain(report: WeaknessReport) -> list[tuple[str, str | None, str | None, int, list[str]]]:
    return [(w.kind, w.domain, w.tool, w.count, w.example_episode_ids) for w in report.weaknesses]


def test_diagnose_episodes_from_eval_gives_the_flows_weaknesses(gymloop_home, tmp_path):
    episodes = tmp_path / "episodes.jsonl"
    done = runner.invoke(app, ["eval", "--domain", "helpdesk", "--k", "1", "--out", str(episodes)])
    assert done.exit_code == 0, done.output
    out = tmp_path / "report.json"
    result = subprocess.run([sys.executable, "-c", "from flows.cli import app; app()", "diagnose", "--episodes",
                             str(episodes), "--out", str(out), "--markdown"], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "COLUMNS": "250"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Diagnosing 22 episodes of helpdesk from ") and "1 rebuilt from gym helpdesk" in \
        lines[0] and "WARNING" not in result.stdout
    cli = read_report(out.read_text())
    shown = " ".join(result.stdout.split())
    for kind in cli.kinds:  # each kind once: its failures summed over its grains, its share and per-episode rate
        assert sum(w.count for w in cli.weaknesses if w.kind == kind.kind) == kind.count
        assert f"{kind.rank} │ {kind.kind} │ {kind.label} │ {kind.count} │ {kind.share:.1%}" in shown
        assert f"{kind.rate:.3f}" in shown
    for column in KIND_COLUMNS + GRAIN_COLUMNS:
        assert f"  {column}: " in result.stdout
    markdown = out.with_suffix(".md").read_text()
    labels = [w.label for w in cli.weaknesses]
    assert len(set(labels)) == len(labels) and all(f"{w.kind_rank}.{w.grain_rank}. {w.label}" in markdown
                                                   for w in cli.weaknesses)
    records, _ = read_episodes_jsonl(episodes)
    flow = diagnose_round(records, [build_pack("helpdesk", seed=0)], None, 0, 0)
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
