import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from flows._offline import OFFLINE_DEFAULTS
from tests.flows.conftest import free_port


def _stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.mark.timeout(900)
def test_mlflow_ui_starts_offline_and_a_tracking_server_keeps_the_plots(gymloop_home, tmp_path):
    """``gymloop mlflow-ui`` (the README's command) serves a page with none of the offline switches set by the
    user; a campaign logging to it over HTTP puts its plots in the server's artifact store, not on the client."""
    from flows.plots import RoundPoint, lift_plot
    from flows.tracking import CampaignTracker

    port = free_port()
    store = tmp_path / "server-artifacts"
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_DEFAULTS and not k.startswith("MLFLOW_")}
    env["GYMLOOP_HOME"] = str(gymloop_home)
    log = tmp_path / "mlflow.log"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from flows.cli import app; app()", "mlflow-ui", "--port", str(port),
         "--artifacts-destination", str(store)],
        env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp_path)
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline, page = time.monotonic() + 400, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                page = httpx.get(f"{uri}/", timeout=5)
                if page.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        if page is None or page.status_code != 200:
            pytest.fail(f"the MLflow UI did not serve a page; log:\n{log.read_text()[-3000:]}")
        assert "<html" in page.text.lower() and "mlflow" in page.text.lower()
        assert (gymloop_home / "mlflow.db").is_file(), "the UI opened gymloop's own store"

        local = tmp_path / "client-artifacts"
        tracker = CampaignTracker(uri, "remote", artifact_root=local)
        png = lift_plot([RoundPoint(index=0, before=0.4, after=0.5, lift=0.1, low=0.02, high=0.18)],
                        tmp_path / "lift_per_round.png", "remote")
        tracker.log_campaign_artifacts([png])
        tracker.finish()
        stored = list(store.rglob("lift_per_round.png"))
        assert len(stored) == 1 and stored[0].read_bytes() == png.read_bytes()
        assert not local.exists()
        assert [a.path for a in tracker.client.list_artifacts(tracker.parent_id)] == ["lift_per_round.png"]

        from flows.round_tracking import run_link, runs_url
        from flows.settings import load_settings

        settings = load_settings(mlflow_uri=uri)
        run = tracker.round_run(0)
        assert run_link(settings, "remote", run) == (  # what the round's Prefect lift artifact says
            f"[MLflow run {run[:8]}]({uri}/#/experiments/{tracker.experiment_id}/runs/{run}"
            "?workflowType=machine_learning)")
        assert runs_url(settings, "remote") == (f"{uri}/#/experiments/{tracker.experiment_id}/runs"
                                                "?workflowType=machine_learning&viewStateShareKey=gymloop")
    finally:
        _stop(proc)
