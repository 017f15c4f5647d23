import json
import os
import shutil

import pytest
from toy_domain import TOY, lookup

from arena.core.pack import (
    MAX_TEXT_BYTES,
    PackError,
    build_pack,
    content_id,
    pack_files,
    parse_pack,
    read_pack,
    write_pack,
)


@pytest.fixture(scope="module")
def pack():
    return build_pack(TOY, seed=1, knobs={"orders": 300})


@pytest.fixture()
def folder(pack, tmp_path):
    return write_pack(pack, tmp_path / "pack")


def _rewrite_task(folder, mutate):
    path = folder / "tasks" / "refund_plain-01.json"
    data = json.loads(path.read_text())
    mutate(data)
    path.write_text(json.dumps(data))


def _refused(folder, file, fragment, field=None):
    with pytest.raises(PackError) as info:
        read_pack(folder, domains=lookup)
    assert info.value.file == file, str(info.value)
    assert fragment in str(info.value)
    if field is not None:
        assert info.value.field == field
    return info.value


def test_round_trip_keeps_content_and_id(pack, folder):
    back = read_pack(folder, domains=lookup)
    assert back.id == pack.id
    assert back.state_db == pack.state_db
    assert [t.model_dump() for t in back.tasks] == [t.model_dump() for t in pack.tasks]
    assert content_id(pack_files(back)) == pack.id


def test_same_seed_same_id_other_seed_other_id(pack):
    assert build_pack(TOY, seed=1, knobs={"orders": 300}).id == pack.id
    assert build_pack(TOY, seed=2, knobs={"orders": 300}).id != pack.id
    assert build_pack(TOY, seed=1, knobs={"orders": 301}).id != pack.id


def test_write_refuses_non_empty_destination(pack, folder):
    with pytest.raises(FileExistsError, match="not empty"):
        write_pack(pack, folder)
    assert read_pack(folder, domains=lookup).id == pack.id


@pytest.mark.parametrize("name", ["state.db", "policy.md", "tools.json", "graph.json", "faults.json", "manifest.json"])
def test_missing_file(folder, name):
    (folder / name).unlink()
    _refused(folder, name, "missing file")


def test_unknown_schema_version(folder):
    path = folder / "manifest.json"
    data = json.loads(path.read_text())
    data["schema_version"] = 7
    path.write_text(json.dumps(data))
    _refused(folder, "manifest.json", "unknown schema version 7", "schema_version")


def test_tool_the_domain_does_not_implement(folder):
    path = folder / "tools.json"
    tools = json.loads(path.read_text())
    tools[0]["name"] = "launch_rockets"
    path.write_text(json.dumps(tools))
    err = _refused(folder, "tools.json", "'launch_rockets' is not implemented by domain 'toy'")
    assert err.field == "0.name"


def test_unknown_domain(folder):
    path = folder / "manifest.json"
    data = json.loads(path.read_text())
    data["domain"] = "casino"
    path.write_text(json.dumps(data))
    _refused(folder, "manifest.json", "unknown domain 'casino'", "domain")


def test_symlink_escaping_the_folder(folder, tmp_path):
    outside = tmp_path / "secret.json"
    outside.write_text("{}")
    os.symlink(outside, folder / "tasks" / "escape.json")
    _refused(folder, "tasks/escape.json", "not a regular file")


def test_symlinked_required_file(folder, tmp_path):
    target = tmp_path / "elsewhere.md"
    shutil.move(folder / "policy.md", target)
    os.symlink(target, folder / "policy.md")
    _refused(folder, "policy.md", "symbolic links")


def test_task_file_name_outside_pattern(folder):
    (folder / "tasks" / "..evil name.json").write_text("{}")
    _refused(folder, "tasks/..evil name.json", "must match")


def test_unexpected_file(folder):
    (folder / "run_me.py").write_text("import os")
    _refused(folder, "run_me.py", "unexpected file")


def test_in_memory_names_cannot_escape(pack):
    files = pack_files(pack)
    files["tasks/../../etc/passwd.json"] = b"{}"
    with pytest.raises(PackError, match="unexpected file"):
        parse_pack(files, domains=lookup)


def test_oversized_file(folder):
    (folder / "policy.md").write_bytes(b"x" * (MAX_TEXT_BYTES + 1))
    _refused(folder, "policy.md", "over the limit")


def test_malformed_json(folder):
    (folder / "faults.json").write_text('[{"id": "x",')
    _refused(folder, "faults.json", "malformed JSON")


def test_nan_in_json_refused(folder):
    (folder / "graph.json").write_text('{"nodes": [], "weight": NaN}')
    _refused(folder, "graph.json", "NaN")


def test_state_assertion_over_unknown_table(folder):
    def mutate(data):
        data["assertions"][0]["sql"] = "SELECT refunded FROM ordrs"
    _rewrite_task(folder, mutate)
    err = _refused(folder, "tasks/refund_plain-01.json", "no such table: ordrs")
    assert err.field == "assertions.0.sql"


def test_state_assertion_over_unknown_column(folder):
    def mutate(data):
        data["assertions"][0]["sql"] = "SELECT refundd FROM orders"
    _rewrite_task(folder, mutate)
    _refused(folder, "tasks/refund_plain-01.json", "no such column: refundd", "assertions.0.sql")


def test_write_scope_over_unknown_column(folder):
    def mutate(data):
        data["assertions"][2]["allowed"][0]["columns"] = ["refunded", "colour"]
    _rewrite_task(folder, mutate)
    _refused(folder, "tasks/refund_plain-01.json", "unknown column orders.colour")


def test_task_field_error_names_the_field(folder):
    def mutate(data):
        data["split"] = "validation"
    _rewrite_task(folder, mutate)
    _refused(folder, "tasks/refund_plain-01.json", "Input should be", "split")


def test_too_few_assertions(folder):
    def mutate(data):
        data["assertions"] = data["assertions"][:2]
    _rewrite_task(folder, mutate)
    _refused(folder, "tasks/refund_plain-01.json", "at least 3", "assertions")


def test_hash_mismatch_when_content_is_tampered(folder):
    (folder / "policy.md").write_text("Refund anything you like.")
    _refused(folder, "manifest.json", "does not match the content hash", "id")


def test_state_db_not_sqlite(folder):
    (folder / "state.db").write_bytes(b"definitely not a database")
    _refused(folder, "state.db", "not a SQLite database")
