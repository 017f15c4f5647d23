from __future__ import annotations

from pathlib import Path

import pytest
from factory_helpers import DOMAIN, small_request

from arena.core.pack import Pack
from factory_client import (
    BackgroundServer,
    HttpFactoryClient,
    IdempotencyConflict,
    LocalFactory,
    create_app,
    make_factory_client,
)
from registry import Registry


@pytest.fixture(scope="module")
def server():
    factory = LocalFactory()
    with BackgroundServer(create_app(factory)) as running:
        yield running
    factory.close()


def test_request_packs_registry_round_trip_over_http(server: BackgroundServer, base_pack: Pack, tmp_path: Path):
    request = small_request(idempotency_key="round-trip")
    with HttpFactoryClient(server.url, timeout=30) as client, Registry(home=tmp_path / "home") as registry:
        result = client.request(request, timeout=120)
        assert result.packs, result.gate_report
        for pack in result.packs:
            registry.add_pack(pack)
        stored = {p.id for p in registry.list_packs(DOMAIN)}
        assert stored == {p.id for p in result.packs}
        assert set(registry.packs.ids()) == stored
        again = registry.load_pack(result.packs[0].id)
        assert again.id == result.packs[0].id
        status = client.status(result.request_id)
    assert status.state == "done" and status.progress == 1.0
    assert status.pack_ids == [p.id for p in result.packs]
    report = result.gate_report
    assert report.accepted == sum(len(p.tasks) for p in result.packs)
    assert report.gates["no_leakage"].checked == report.candidates
    for pack in result.packs:
        assert pack.manifest.parent == base_pack.id
        prov = pack.manifest.provenance
        assert prov["generator"] == "gymloop.local-factory" and prov["version"]
        assert prov["request"] == request.fingerprint()
        assert [t["kind"] for t in prov["targets"]] == ["missed_policy_dependency", "wrong_id"]
        assert all(t.split == "train" for t in pack.tasks)
        assert 1 <= len(pack.tasks) <= request.tasks_per_variant


def test_submit_is_idempotent(server: BackgroundServer):
    request = small_request(idempotency_key="same-key", variants=1, tasks_per_variant=1)
    with HttpFactoryClient(server.url) as client:
        first = client.submit(request)
        second = client.submit(request)
        assert first == second
        with pytest.raises(IdempotencyConflict, match="same-key"):
            client.submit(small_request(idempotency_key="same-key", variants=1, tasks_per_variant=1, seed=99))
        other = client.submit(request.model_copy(update={"idempotency_key": "other-key"}))
        assert other != first
        assert client.wait(first, 60).state == "done"
        assert client.wait(other, 60).state == "done"
        assert client.status(first).pack_ids == client.status(other).pack_ids


def test_unknown_domain_and_protocol_version_are_refused_by_the_server(server: BackgroundServer):
    import httpx

    body = small_request().model_dump(mode="json")
    r = httpx.post(server.url + "/v1/requests", json={**body, "domain": "nowhere"})
    assert r.status_code == 400 and "nowhere" in r.json()["detail"]
    r = httpx.post(server.url + "/v1/requests", json={**body, "protocol_version": 99})
    assert r.status_code == 400 and "protocol version 99" in r.json()["detail"]
    assert httpx.get(server.url + "/v1/requests/req-nope").status_code == 404


def test_make_factory_client_picks_local_or_http(server: BackgroundServer):
    assert isinstance(make_factory_client(None), LocalFactory)
    client = make_factory_client(server.url)
    assert isinstance(client, HttpFactoryClient)
    client.close()
