import io
import json

from PIL import Image
from rich.console import Console
from typer.testing import CliRunner

from flows.cli import app
from flows.cli_output import print_table
from flows.cli_run import ROUND_COLUMNS
from flows.plots import RoundPoint, WeaknessCell, lift_plot, rank_kinds, weakness_heatmap

ROW = ["2", "reference@v2:80119453022db50e", "reference@v3:5c1d0e2f9a8b7c6d", "0.557", "0.580", "+0.023",
       "[-0.011, +0.057]", "3, 5 of 88", "yes", "tau2-retail +0.025 [-0.050, +0.100]", "0/3 of 352", "0.574", "48213",
       "$0.0412",
       "no_error_recovery, leaked_internal_data, search_without_fetch"]


def _render(width: int) -> str:
    console = Console(width=width, file=io.StringIO(), force_terminal=False)
    print_table(console, "campaign nightly", ROUND_COLUMNS, [ROW], right=("round",))
    return console.file.getvalue()


def test_narrow_console_prints_every_value_whole_on_one_line():
    out = _render(80)
    lines = out.splitlines()
    for column, value in zip(ROUND_COLUMNS, ROW, strict=True):
        assert any(column in line and value in line for line in lines), (column, value, out)
    assert "…" not in out


def test_wide_console_prints_a_table_with_every_value():
    out = _render(320)
    header = next(line for line in out.splitlines() if "model in" in line)
    assert "model out" in header and "95% interval" in header
    for value in ROW:
        assert value in out


def test_piped_eval_and_diagnose_json_parse_and_narrow_tables_keep_kinds(tmp_path):
    runner = CliRunner(env={"COLUMNS": "80"})
    episodes = tmp_path / "episodes.jsonl"
    result = runner.invoke(app, ["eval", "--domain", "helpdesk", "--k", "1", "--out", str(episodes), "--json"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)
    assert metrics["groups"]["all"]["episodes"] == len(episodes.read_text().splitlines())
    report = runner.invoke(app, ["diagnose", "--episodes", str(episodes), "--out", str(tmp_path / "w.json"),
                                 "--json"])
    assert report.exit_code == 0, report.output
    kinds = [w["kind"] for w in json.loads(report.stdout)["weaknesses"]]
    assert kinds, "the starting reference policy fails some held-out helpdesk tasks"
    table = runner.invoke(app, ["diagnose", "--episodes", str(episodes), "--out", str(tmp_path / "w.json")])
    assert table.exit_code == 0, table.output
    assert all(any(kind in line for line in table.output.splitlines()) for kind in kinds)
    assert "…" not in table.output


def test_settings_typos_and_non_json_lists_get_one_clear_line(gymloop_home, monkeypatch):
    runner = CliRunner(env={"COLUMNS": "80"})
    result = runner.invoke(app, ["round", "--campaign", "x", "--strategy", "targetted"])
    assert result.exit_code == 2 and "did you mean 'targeted'?" in result.output
    monkeypatch.setenv("GYMLOOP_DOMAINS", "helpdesk")
    result = runner.invoke(app, ["round", "--campaign", "x"])
    assert result.exit_code == 2
    assert "GYMLOOP_DOMAINS='helpdesk'" in result.output and "must be JSON" in result.output
    assert "gymloop.toml" not in result.output and len(result.output.strip().splitlines()) == 1
    typo = runner.invoke(app, ["campain"])
    assert typo.exit_code == 2 and "campaign" in typo.output


def test_a_mistyped_choice_is_matched_against_its_own_settings_choices_only(gymloop_home, tmp_path):
    runner = CliRunner(env={"COLUMNS": "200"})
    (tmp_path / "gymloop.toml").write_text('[trl]\nmethod = "sft"\ndemonstrations = "referense"\n')
    close = runner.invoke(app, ["round", "--campaign", "x"])
    assert close.exit_code == 2 and "did you mean 'reference'?" in close.output
    (tmp_path / "gymloop.toml").write_text('[trl]\nmethod = "sft"\ndemonstrations = "expert"\n')
    far = runner.invoke(app, ["round", "--campaign", "x"])
    assert far.exit_code == 2 and "'gold' or 'reference'" in far.output and "did you mean" not in far.output


def test_registry_status_reads_registry_url_from_gymloop_toml(gymloop_home, tmp_path):
    url = f"sqlite:///{tmp_path / 'from-toml.db'}"
    (tmp_path / "gymloop.toml").write_text(f'registry_url = "{url}"\n')
    runner = CliRunner(env={"COLUMNS": "200"})
    missing = runner.invoke(app, ["registry", "status"])
    assert missing.exit_code == 1 and "from-toml.db" in missing.output and "registry upgrade" in missing.output
    assert not (tmp_path / "from-toml.db").exists() and not (gymloop_home / "registry.db").exists()
    upgraded = runner.invoke(app, ["registry", "upgrade"])
    assert upgraded.exit_code == 0, upgraded.output
    status = runner.invoke(app, ["registry", "status"])
    assert status.exit_code == 0 and "from-toml.db" in status.output


def test_plots_are_titled_pngs_and_the_heatmap_is_ranked(tmp_path):
    points = [RoundPoint(index=i, before=0.4 + 0.05 * i, after=0.45 + 0.05 * i, lift=0.05, low=0.01, high=0.09)
              for i in range(3)]
    cells = {"wrong_id": {0: WeaknessCell(share=0.5, count=10), 2: WeaknessCell(share=0.1, count=2)},
             "stale_state": {0: WeaknessCell(share=0.2, count=4), 2: WeaknessCell(share=0.6, count=9)},
             "gave_up_early": {2: WeaknessCell(share=0.3, count=5)}}
    assert rank_kinds(cells) == ["stale_state", "gave_up_early", "wrong_id"]
    for path in (lift_plot(points, tmp_path / "lift.png", "nightly"),
                 weakness_heatmap(cells, tmp_path / "heat.png", "nightly")):
        with Image.open(path) as image:
            assert image.format == "PNG" and image.width >= 500 and image.height >= 300
            colors = image.convert("L").getextrema()
            assert colors[1] - colors[0] > 100, f"{path.name} is blank"


def test_unreachable_mlflow_stops_a_round_before_it_runs(gymloop_home):
    from registry import Registry
    from tests.flows.conftest import free_port

    uri = f"http://127.0.0.1:{free_port()}"
    result = CliRunner(env={"GYMLOOP_MLFLOW_URI": uri, "COLUMNS": "80"}).invoke(app, ["round", "--campaign", "x"])
    assert result.exit_code == 2
    assert uri in result.output and "unreachable" in result.output and "mlflow_uri" in result.output
    assert len(result.output.strip().splitlines()) == 1
    if (gymloop_home / "registry.db").exists():
        registry = Registry(f"sqlite:///{gymloop_home / 'registry.db'}")
        assert not [c for c in registry.campaigns() if c.name == "x"]
