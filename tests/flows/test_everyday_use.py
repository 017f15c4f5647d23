"""Everyday use through the doors users use: the ``gymloop`` command at 80 columns, MLflow and Prefect.

One real ``prefect server`` and one small demo (tracker only, one round beside its uniform control) then a manual
``gymloop round`` of the demo's campaign serve the whole module: the commands run as subprocesses against them,
``gymloop mlflow-ui`` serves the demo's store, and headless Chromium (Debian's ``chromium`` driven by
``playwright``) opens both UIs from the URLs gymloop prints.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from conftest import free_port

pytestmark = [pytest.mark.xdist_group("everyday-use"), pytest.mark.timeout(900)]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ROUND_SETTINGS = {"variants_per_round": 1, "tasks_per_variant": 4, "wave_budget": 60}


def _env(home: Path, api: str | None, **settings: object) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GYMLOOP_", "MLFLOW_TRACKING"))}
    env.update({"GYMLOOP_HOME": str(home), "COLUMNS": "80", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "PREFECT_HOME": str(home / "prefect-client"), "GYMLOOP_DOMAINS": '["tracker"]', "GYMLOOP_EVAL_K": "2"})
    if api:
        env["PREFECT_API_URL"] = api
    for key, value in settings.items():
        env[f"GYMLOOP_{key.upper()}"] = json.dumps(value) if isinstance(value, list) else str(value)
    return env


def gymloop(args: list[str], env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from flows.cli import app; app()", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(args, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _wait_healthy(url: str, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"{url} did not answer within {timeout} s; log:\n{log.read_text()[-3000:]}")


@dataclass
class World:
    """What the module's tests share: a home with a demo and a manual round, and a Prefect server."""

    home: Path
    api: str
    ui: str
    demo: subprocess.CompletedProcess[str]
    campaign: str
    round: subprocess.CompletedProcess[str]

    def env(self) -> dict[str, str]:
        return _env(self.home, self.api)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("everyday")
    home = root / "home"
    port = free_port()
    api, ui = f"http://127.0.0.1:{port}/api", f"http://127.0.0.1:{port}"
    server_env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    server_env.update({"PREFECT_HOME": str(root / "prefect-server"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                       "PREFECT_UI_API_URL": api})
    log = root / "prefect-server.log"
    server = _start([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                     str(port)], server_env, log)
    try:
        _wait_healthy(f"{api}/health", 240, log)
        demo = gymloop(["demo", "--rounds", "1", "--home", str(home)], _env(home, api))
        assert demo.returncode == 0, demo.stderr[-3000:]
        campaign = re.search(r"campaign (demo-\d{8}-\d{6}):", demo.stdout)
        assert campaign, demo.stdout
        manual = gymloop(["round", "--campaign", campaign.group(1), "--json"], _env(home, api, **ROUND_SETTINGS))
        assert manual.returncode == 0, manual.stderr[-3000:]
        yield World(home=home, api=api, ui=ui, demo=demo, campaign=campaign.group(1), round=manual)
    finally:
        _stop(server)


@pytest.fixture(scope="module")
def mlflow_ui(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, int]]:
    """``gymloop mlflow-ui`` on the demo's store: (its printed output, its address, its process id)."""
    port = free_port()
    log = tmp_path_factory.mktemp("mlflow-ui") / "mlflow-ui.log"
    proc = _start([sys.executable, "-c", "from flows.cli import app; app()", "mlflow-ui", "--port", str(port)],
                  world.env(), log)
    try:
        _wait_healthy(f"http://127.0.0.1:{port}/health", 300, log)
        yield log.read_text(), f"http://127.0.0.1:{port}", proc.pid
    finally:
        _stop(proc)


def _rounds(world: World) -> dict[int, dict[str, object]]:
    """The targeted arm's round summaries by round, as ``gymloop report --json`` reads them from the registry."""
    report = json.loads(gymloop(["report", world.campaign, "--json"], world.env()).stdout)
    return {int(s["round_index"]): s for s in report["rounds"]}


def _no_cut_value(out: str) -> None:
    """Nothing in ``out`` was cut without saying how much (rich's ellipsis marks a cut cell)."""
    for line in out.splitlines():
        assert "…" not in line or re.search(r"… \[[\d,]+ more characters\]", line), line


def test_demo_prints_every_value_at_80_columns_and_the_runs_view_of_its_campaign(world: World) -> None:
    from mlflow.tracking import MlflowClient

    out = world.demo.stdout
    _no_cut_value(out)
    report = json.loads(gymloop(["report", world.campaign, "--json"], world.env()).stdout)
    summary = report["rounds"][0]
    for value in (summary["model_in"], summary["model_out"], f"[{summary['lift_low']:+.3f}, "
                  f"{summary['lift_high']:+.3f}]", *summary["weaknesses"][:3]):
        assert value in out, value
    url = re.search(r"open MLflow: .*gymloop mlflow-ui, then (\S+)", out)
    assert url, out
    client = MlflowClient(f"sqlite:///{world.home / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(f"gymloop/{world.campaign}")
    assert url.group(1) == (f"http://127.0.0.1:5000/#/experiments/{experiment.experiment_id}/runs"
                            "?workflowType=machine_learning&viewStateShareKey=gymloop")
    assert report["mlflow_runs_url"] == url.group(1)


def test_json_is_the_only_stdout_on_success_and_failure(world: World, tmp_path: Path) -> None:
    env = world.env()
    episodes = tmp_path / "episodes.jsonl"
    succeed = {
        "eval": ["eval", "--domain", "tracker", "--k", "1", "--out", str(episodes), "--json"],
        "diagnose": ["diagnose", "--episodes", str(episodes), "--out", str(tmp_path / "w.json"), "--json"],
        "campaigns": ["campaigns", "--json"],
        "compare": ["compare", world.campaign, f"{world.campaign}/uniform", "--json"],
        "report": ["report", world.campaign, "--json"],
    }
    for name, args in succeed.items():
        done = gymloop(args, env)
        assert done.returncode == 0, (name, done.stderr[-2000:])
        assert isinstance(json.loads(done.stdout), dict | list), name
    assert json.loads(world.round.stdout)["rounds"][0]["round_index"] == 1
    fail = {
        "eval": (["eval", "--domain", "nope", "--json"], "'nope'"),
        "diagnose": (["diagnose", "--episodes", str(tmp_path / "missing.jsonl"), "--json"], "missing.jsonl"),
        "round": (["round", "--campaign", "x", "--strategy", "targetted", "--json"], "did you mean 'targeted'?"),
        "campaign": (["campaign", "--name", "../x", "--json"], "bad campaign name '../x'"),
        "demo": (["demo", "--rounds", "0", "--json"], "--rounds"),
        "report": (["report", "nosuch", "--json"], "nosuch"),
        "compare": (["compare", "nosuch", "other", "--json"], "nosuch"),
        "episode": (["episode", "ffffffffff", "--json"], "ffffffffff"),
    }
    for name, (args, reason) in fail.items():
        done = gymloop(args, env)
        assert done.returncode != 0, name
        error = json.loads(done.stdout)
        assert reason in error["error"] and error["exit_code"] == done.returncode, (name, error)
        assert reason in done.stderr and "Traceback" not in done.stderr, (name, done.stderr)
    plain = gymloop(["report", "nosuch"], env)
    assert plain.returncode == 2 and plain.stdout == "" and plain.stderr.startswith("error: ")


def test_every_table_keeps_every_value_at_80_columns(world: World, tmp_path: Path) -> None:
    from arena.core.pack import build_pack

    env = world.env()
    helpdesk = build_pack("helpdesk", seed=0)
    shown = gymloop(["gyms", "show", "helpdesk"], env)
    assert shown.returncode == 0, shown.stderr
    for value in [f.id for f in helpdesk.faults] + [t.name for t in helpdesk.tools]:
        assert value in shown.stdout.split(), value
    episodes = tmp_path / "episodes.jsonl"
    runs = {
        "gyms list": ["gyms", "list"], "gyms show": ["gyms", "show", "helpdesk"], "registry": ["registry", "status"],
        "campaigns": ["campaigns"], "compare": ["compare", world.campaign, f"{world.campaign}/uniform"],
        "eval": ["eval", "--domain", "tracker", "--k", "1", "--out", str(episodes)],
        "diagnose": ["diagnose", "--episodes", str(episodes), "--out", str(tmp_path / "w.json")],
    }
    outputs = {}
    for name, args in runs.items():
        done = gymloop(args, env)
        assert done.returncode == 0, (name, done.stderr[-2000:])
        _no_cut_value(done.stdout)
        outputs[name] = done.stdout
    for line in outputs["gyms list"].splitlines():
        assert len(line.rstrip()) <= 80 or not line.startswith(("│", "┃")), line
    listed = json.loads(gymloop(["campaigns", "--json"], env).stdout)
    for row in listed:
        assert row["campaign"] in outputs["campaigns"] and (row["model_out"] or "") in outputs["campaigns"]


def test_episode_shows_one_play_per_model_and_arm_with_round_numbers(world: World) -> None:
    from registry import Registry

    env = world.env()
    folder = world.home / "campaigns" / world.campaign / "round-000"
    cited = json.loads((folder / "weakness_report.json").read_text())["weaknesses"][0]["example_episode_ids"][0]
    registry = Registry(f"sqlite:///{world.home / 'registry.db'}", world.home)
    copies = registry.find_episodes(cited)
    data = json.loads(gymloop(["episode", cited[:10], "--json"], env).stdout)
    plays = data["plays"]
    assert len(plays) == len({(registry.round(rid).arm_id, r.model_ref) for rid, _, r in copies})
    assert len(plays) < len(copies), "a re-eval copied into the next round is one play, not two"
    assert {p["arm"] for p in plays} == {"targeted", "uniform"}
    for play in plays:
        assert play["episode"]["model_ref"] == play["model"] and play["episode"]["episode_id"] == cited
    rounds = sorted(sorted(w["round"] for w in p["stored_in"]) for p in plays if p["arm"] == "targeted")
    assert rounds == [[0], [0, 1], [1]]
    text = gymloop(["episode", cited[:10]], env)
    assert text.returncode == 0, text.stderr
    _no_cut_value(text.stdout)
    behaviours = data["behaviours"]
    said = " ".join(text.stdout.split())
    assert f"{len(plays)} plays (one per model and arm), {len(behaviours)} different behaviour" in said
    assert text.stdout.count("\ntrace\n") == len(behaviours), "identical plays are shown once"
    assert "round 0 re-eval, round 1 held-out eval" in said
    only = json.loads(gymloop(["episode", cited, "--campaign", world.campaign, "--arm", "uniform", "--json"],
                              env).stdout)
    assert {p["arm"] for p in only["plays"]} == {"uniform"}


def test_report_on_screen_renders_markdown_with_images_as_links(world: World) -> None:
    done = gymloop(["report", world.campaign], world.env())
    assert done.returncode == 0, done.stderr
    out = done.stdout
    folder = (world.home / "campaigns" / world.campaign).resolve()
    lines = [line.strip() for line in out.splitlines()]
    for alt, image in (("lift per round", "lift_per_round.png"), ("weaknesses by round", "weaknesses_by_round.png")):
        assert lines[lines.index(f"{alt}:") + 1] == (folder / image).as_uri(), "an image's link follows its name"
    assert "!(" not in out and "](" not in out and "| ---" not in out
    _no_cut_value(out)
    summary = _rounds(world)[0]
    assert summary["model_out"] in out.split() and "Targeting against the uniform control" in out


def test_mlflow_holds_each_scope_in_its_own_rows_under_short_rounded_names_and_aliases(world: World) -> None:
    from mlflow.tracking import MlflowClient

    from flows.tracking import HEADLINE, VIEW_TAG, view_state_of

    client = MlflowClient(f"sqlite:///{world.home / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(f"gymloop/{world.campaign}")
    view = view_state_of(experiment.tags[VIEW_TAG])
    assert view is not None and view["selectedColumns"] == [f"metrics.`{k}`" for k in HEADLINE]
    parents = {r.data.tags["arm"]: r for r in client.search_runs(
        [experiment.experiment_id], filter_string="tags.gymloop_kind = 'campaign'")}
    assert parents["targeted"].info.run_name == f"targeted {world.campaign}"
    assert parents["uniform"].info.run_name == f"uniform {world.campaign}"
    rounds = _rounds(world)
    summary = rounds[1]
    targeted = client.get_run(parents["targeted"].info.run_id)
    metrics = targeted.data.metrics
    assert "round" not in metrics and metrics["before"] == round(rounds[0]["before"], 3), "the campaign's scope"
    assert metrics["after"] == round(summary["after"], 3)
    outputs = sorted(targeted.outputs.model_outputs, key=lambda o: o.step)
    assert [o.step for o in outputs] == [0, 1]
    assert client.get_logged_model(outputs[-1].model_id).tags["gymloop_model"] == summary["model_out"]
    assert targeted.data.tags["final_model"] == summary["model_out"]
    assert sorted(m.step for m in client.get_metric_history(targeted.info.run_id, "lift")) == [0, 1]
    model = client.get_registered_model(f"gymloop-{world.campaign}")
    assert set(model.aliases) == {"best", "current"}
    assert client.get_model_version_by_alias(model.name, "current").tags["gymloop_model"] == summary["model_out"]
    afters = {i: s["after"] for i, s in rounds.items()}
    best = max(afters, key=lambda i: (afters[i], i))
    assert client.get_model_version_by_alias(model.name, "best").tags["gymloop_round"] == str(best)
    assert metrics["best_round"] == best


def _descendants(pid: int) -> list[str]:
    """Command lines of a process's descendants (other sessions' MLflow servers on this machine are not ours)."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            commands[int(proc.name)] = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parents[int(proc.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        children = [p for p, parent in parents.items() if parent == current]
        found += [commands[c] for c in children]
        todo += children
    return found


def test_mlflow_ui_runs_one_worker_and_no_job_runner(world: World, mlflow_ui: tuple[str, str, int]) -> None:
    printed, address, pid = mlflow_ui
    assert f"MLflow UI on {address}" in printed and "(1 worker)" in printed
    commands = _descendants(pid)
    servers = [c for c in commands if "uvicorn" in c]
    assert servers and all("--workers 1" in c for c in servers), commands
    assert not [c for c in commands if "huey" in c], commands


def _browser():  # type: ignore[no-untyped-def]
    if not CHROMIUM.is_file():
        pytest.skip(f"no browser: {CHROMIUM} is missing (apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api", reason="pip package playwright is not installed")
    return playwright.sync_playwright()


@pytest.fixture(scope="module")
def second(world: World) -> str:
    """A second campaign in the demo's home (one round, no control), to compare with the demo's."""
    done = gymloop(["round", "--campaign", "second"], _env(world.home, world.api, **ROUND_SETTINGS))
    assert done.returncode == 0, done.stderr[-3000:]
    return "second"


def _shot(page, name: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Save a screenshot of the page (into GYMLOOP_TEST_SCREENSHOTS when set, to show what the test saw)."""
    folder = Path(os.environ.get("GYMLOOP_TEST_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name), full_page=True)


def _shown(value: float) -> str:
    """A metric as MLflow's runs table shows a value gymloop logged rounded to 3 decimals."""
    return f"{value:.3f}".rstrip("0").rstrip(".")


def test_the_experiment_opens_from_the_list_on_both_arms_rounds_and_two_campaigns_compare(
        world: World, mlflow_ui: tuple[str, str, int], second: str, tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    _, address, _ = mlflow_ui
    client = MlflowClient(f"sqlite:///{world.home / 'mlflow.db'}")
    ids = [client.get_experiment_by_name(f"gymloop/{name}").experiment_id for name in (world.campaign, second)]
    rounds = _rounds(world)
    arm = {r.data.tags["arm"]: r.data.metrics for r in client.search_runs(
        [ids[0]], filter_string="tags.gymloop_kind = 'campaign'")}
    names = [f"targeted {world.campaign} round {i}" for i in rounds] + [f"uniform {world.campaign} round 0"]
    values = [_shown(v) for s in rounds.values() for v in (s["before"], s["after"])]
    values += [_shown(arm["targeted"][k]) for k in ("lift", "lift_low", "lift_high", "tgt_lift", "tgt_low",
                                                     "tgt_high", "best_round")]
    headers = ("round", "before", "after", "lift", "lift_low", "lift_high", "tgt_lift", "best_round")
    with _browser() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(f"{address}/#/experiments")
            page.get_by_text(f"gymloop/{world.campaign}", exact=True).first.click()
            grid = page.get_by_role("grid").or_(page.get_by_role("table")).first
            grid.wait_for(timeout=60_000)
            for name in names:
                page.get_by_text(name, exact=True).first.wait_for(timeout=30_000)
            text = grid.inner_text()
            assert all(h in text.split() for h in headers), text[:2000]
            assert all(v in text.split() for v in values), (values, text[:3000])
            assert not re.search(r"\d\.\d{4,}", text), "a value is not rounded"
            assert "Traces" not in page.locator("main").first.inner_text()[:200]
            _shot(page, "mlflow-experiment.png", tmp_path)
            page.goto(f"{address}/#/compare-experiments/s?experiments={json.dumps(sorted(ids))}")
            page.get_by_text(f"targeted {second} round 0", exact=True).first.wait_for(timeout=60_000)
            page.get_by_text(f"targeted {world.campaign} round 1", exact=True).first.wait_for(timeout=30_000)
            compared = page.get_by_role("grid").or_(page.get_by_role("table")).first.inner_text()
            assert all(h in compared.split() for h in headers), compared[:2000]
            _shot(page, "mlflow-compare.png", tmp_path)
        finally:
            browser.close()


def test_every_prefect_run_is_tagged_and_the_browser_finds_a_manual_rounds_logs_and_artifacts(world: World) -> None:
    every = httpx.post(f"{world.api}/flow_runs/filter", json={"limit": 200}, timeout=30).json()
    tasks = httpx.post(f"{world.api}/task_runs/filter", json={"limit": 200}, timeout=30).json()
    runs = [r for r in every if r["name"] == f"{world.campaign}-round-1"]
    assert len(runs) == 1 and len(every) >= 6  # each arm's next-round parents and rounds, the manual round
    campaigns = {f"campaign:{world.campaign}", "campaign:second"}  # the demo's and the one compared with it
    for run in every:
        assert campaigns & set(run["tags"]), (run["name"], run["tags"])
        if run["name"].startswith(f"{world.campaign}-uniform-round-"):
            assert "arm:uniform" in run["tags"], (run["name"], run["tags"])
    assert tasks and all(campaigns & set(t["tags"]) for t in tasks)
    assert len({r["name"] for r in every}) == len(every), "two flow runs share a name"
    logs = httpx.post(f"{world.api}/logs/filter", json={"logs": {"flow_run_id": {"any_": [runs[0]["id"]]}}},
                      timeout=30).json()
    assert any("round 1: evaluated reference" in log["message"] for log in logs)
    with _browser() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(f"{world.ui}/runs/flow-run/{runs[0]['id']}")
            page.get_by_text("round 1: evaluated reference").first.wait_for(timeout=60_000)
            page.get_by_role("tab", name="Artifacts").or_(page.get_by_text("Artifacts", exact=True)).first.click()
            page.get_by_text(f"{world.campaign}-lift").first.wait_for(timeout=30_000)
        finally:
            browser.close()
