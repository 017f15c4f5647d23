"""The served factory under load and attack: cancel, fairness, expiry, baseline references, its access log."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from factory_helpers import DOMAIN, small_request

from factory_client import (
    BackgroundServer,
    FactoryLimits,
    GateConfig,
    HttpFactoryClient,
    LocalFactory,
    VariantRequest,
    create_app,
)

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[2]


def _large_request() -> VariantRequest:
    return VariantRequest(domain=DOMAIN, targets=[], variants=500, tasks_per_variant=200, seed=3,
                          gate=GateConfig(k=50, band_min=0, band_max=50))


def test_a_large_job_does_not_block_a_small_one_and_can_be_cancelled() -> None:
    factory = LocalFactory()
    try:
        with BackgroundServer(create_app(factory)) as server, HttpFactoryClient(server.url, timeout=30) as client:
            large = client.submit(_large_request())
            deadline = time.monotonic() + 60
            while client.status(large).state != "running":
                assert time.monotonic() < deadline, "the large request never started"
                time.sleep(0.1)
            result = client.request(small_request(seed=5), timeout=300)
            assert result.packs
            assert client.status(large).state == "running", "the small request waited for the large one to end"
            cancelled = client.cancel(large)
            assert cancelled.state == "cancelled" and cancelled.message == "cancelled by the client"
            time.sleep(1.0)
            assert client.status(large).state == "cancelled"
            assert client.request(small_request(seed=6), timeout=300).packs  # the worker moved on
            assert httpx.delete(server.url + "/v1/requests/req-nope").status_code == 404
    finally:
        factory.close()


def test_finished_jobs_and_their_archives_expire() -> None:
    factory = LocalFactory(limits=FactoryLimits(job_ttl_s=1.0))
    try:
        result = factory.request(small_request(seed=7), timeout=300)
        pack_id = result.packs[0].id
        assert factory.archive(pack_id)
        time.sleep(1.5)
        with pytest.raises(KeyError, match="unknown request"):
            factory.status(result.request_id)
        with pytest.raises(KeyError, match="not held by this factory"):
            factory.archive(pack_id)
    finally:
        factory.close()


def test_a_full_queue_answers_429_with_retry_after() -> None:
    factory = LocalFactory(limits=FactoryLimits(max_queued=1))
    try:
        with BackgroundServer(create_app(factory)) as server:
            first = httpx.post(server.url + "/v1/requests", json=_large_request().model_dump(mode="json"))
            assert first.status_code == 202
            second = httpx.post(server.url + "/v1/requests", json=small_request(seed=8).model_dump(mode="json"))
            assert second.status_code == 429 and second.headers["retry-after"]
            assert "requests are queued or running (the limit)" in second.json()["detail"]
            httpx.delete(server.url + f"/v1/requests/{first.json()['request_id']}")
    finally:
        factory.close()


def test_baseline_model_naming_a_server_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    secret_file = tmp_path / "params.json"
    secret_file.write_text('{"schema_version": "SECRET-SCHEMA-7731"}')
    fifo = tmp_path / "blocks-if-opened.json"
    os.mkfifo(fifo)  # opening it for reading would block: a request that read it would never answer
    factory = LocalFactory()
    try:
        with BackgroundServer(create_app(factory)) as server:
            answers = {}
            for path in (secret_file, fifo, tmp_path / "missing.json"):
                body = small_request(baseline_model=str(path)).model_dump(mode="json")
                answers[path.name] = httpx.post(server.url + "/v1/requests", json=body, timeout=20)
            for name, response in answers.items():
                assert response.status_code == 400, name
                assert "SECRET-SCHEMA" not in response.text
            shapes = {r.json()["detail"].replace(n, "NAME") for n, r in answers.items()}
            assert len(shapes) == 1, shapes  # an existing file and a missing one read the same: no existence oracle
            assert "is not a model this factory knows" in shapes.pop()
    finally:
        factory.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_factory_serve_states_its_auth_and_its_access_log_has_no_traceback(tmp_path: Path) -> None:
    port = _free_port()
    token = "factory-serve-token-0193"
    env = {**os.environ, "GYMLOOP_HOME": str(tmp_path / "home"), "GYMLOOP_SERVE_TOKEN": token,
           "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", "from flows.cli import app; app()", "factory", "serve", "--port",
                             str(port)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/v1/info", timeout=2).status_code == 401:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the factory did not start"
            time.sleep(0.2)
        headers = {"Authorization": f"Bearer {token}"}
        assert httpx.get(url + "/v1/info", headers=headers).status_code == 200
        assert httpx.get(url + f"/v1/requests/req-x?token={token}", headers=headers).status_code == 404
        assert httpx.get(url + "/v1/info", headers={"Host": "evil.example"}).status_code == 421
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    output = out + err
    assert "auth: every request needs 'Authorization: Bearer <token>'" in out
    assert '"GET /v1/info HTTP/1.1" 200' in output and '"GET /v1/info HTTP/1.1" 401' in output
    assert "/v1/requests/req-x?token=***" in output
    assert "Logging error" not in output and "Traceback" not in output
    assert token not in output
