"""``gymloop gyms serve|image`` end bad input with one clear line and exit code 2."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.cli import app

runner = CliRunner(env={"COLUMNS": "250"})


@pytest.mark.parametrize(("args", "message"), [
    (["gyms", "serve", "no-such-gym"], "'no-such-gym' is neither a pack folder nor a built-in domain"),
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
