"""``gymloop gyms serve|image`` end bad input with one clear line and exit code 2."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.cli import app

runner = CliRunner(env={"COLUMNS": "250"})


@pytest.mark.parametrize(("args", "message"), [
    (["gyms", "serve", "no-such-gym"], "'no-such-gym' is neither a pack folder nor an installed gym"),
    (["gyms", "serve", "helpdesk", "--transport", "http", "--host", "0.0.0.0"],
     "refusing to serve on 0.0.0.0 without a token"),
    (["gyms", "serve", "helpdesk", "--transport", "sse"], "--transport 'sse' is not one of stdio, http"),
    (["gyms", "image", "helpdesk"], "no Docker daemon answers at unix:///nonexistent.sock"),
])
def test_gyms_serve_and_image_refuse_in_one_line(args: list[str], message: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0]


@pytest.mark.timeout(300)
def test_gyms_serve_banner_states_the_auth_and_who_gets_verdict_details(tmp_path: object) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    import httpx

    from tests.serve.conftest import free_port

    root = Path(__file__).resolve().parents[2]
    port = free_port()
    env = {**os.environ, "GYMLOOP_SERVE_TOKEN": "serve-banner-token-4411",
           "GYMLOOP_SERVE_OPERATOR_TOKEN": "serve-banner-operator-9922", "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-c", "from flows.cli import app; app()", "gyms", "serve", "helpdesk",
                             "--transport", "http", "--port", str(port)], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 401:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the gym server did not start"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert f"MCP at http://127.0.0.1:{port}/mcp" in err
    assert "auth: every request needs 'Authorization: Bearer <token>' (the GYMLOOP_SERVE_TOKEN setting)" in err
    assert "verdict details: only to requests carrying the operator token (GYMLOOP_SERVE_OPERATOR_TOKEN)" in err
    assert "serve-banner" not in out + err
