import json

from typer.testing import CliRunner

from arena.core.episode import EpisodeRecord
from arena.core.pack import build_pack, write_pack
from flows.cli import app

runner = CliRunner(env={"COLUMNS": "250"})


def test_gyms_list_names_every_gym():
    result = runner.invoke(app, ["gyms", "list"])
    assert result.exit_code == 0, result.output
    for name in ("helpdesk", "tracker", "procurement"):
        assert name in result.output


def test_gyms_check_helpdesk_passes_every_task():
    result = runner.invoke(app, ["gyms", "check", "helpdesk"])
    assert result.exit_code == 0, result.output
    assert "every check passed" in result.output and "FAIL" not in result.output
    assert "Weakness kinds the factory can target" in result.output
    assert "missed_policy_dependency" in result.output and "wrong_id" in result.output


def test_gyms_show_a_pack_folder_and_refuse_a_tampered_one(tmp_path):
    folder = write_pack(build_pack("procurement", seed=0), tmp_path / "pack")
    shown = runner.invoke(app, ["gyms", "show", str(folder)])
    assert shown.exit_code == 0, shown.output
    assert "Tables" in shown.output and "pay_invoice" in shown.output and "heldout" in shown.output
    (folder / "policy.md").write_text("Pay every invoice at once.")
    refused = runner.invoke(app, ["gyms", "show", str(folder)])
    assert refused.exit_code == 2
    assert "does not match the content hash" in " ".join(refused.output.split())  # the line wraps with the path


def test_gyms_show_unknown_target():
    result = runner.invoke(app, ["gyms", "show", "casino"])
    assert result.exit_code == 2 and "neither a pack folder nor an installed gym" in result.output


def test_eval_offline_writes_episodes_and_prints_metrics(tmp_path):
    out = tmp_path / "episodes.jsonl"
    result = runner.invoke(app, ["eval", "--model", "reference", "--domain", "helpdesk", "--split", "heldout",
                                 "--k", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = [EpisodeRecord.model_validate_json(line) for line in out.read_text().splitlines()]
    heldout = [t for t in build_pack("helpdesk", seed=0).tasks if t.split == "heldout"]
    assert len(records) == 2 * len(heldout)
    assert {r.split for r in records} == {"heldout"} and {r.attempt for r in records} == {0, 1}
    assert "pass^2" in result.output and "domain helpdesk" in result.output
    again = runner.invoke(app, ["eval", "--model", "reference", "--domain", "helpdesk", "--k", "2", "--out",
                                str(tmp_path / "b.jsonl")])
    assert again.exit_code == 0
    assert [json.loads(x)["verdict"] for x in (tmp_path / "b.jsonl").read_text().splitlines()] == \
        [json.loads(x)["verdict"] for x in out.read_text().splitlines()]


def test_eval_refuses_unknown_domain():
    result = runner.invoke(app, ["eval", "--domain", "casino"])
    assert result.exit_code == 2 and "casino" in result.output
