"""Environment packs: build, hash, write, read and validate.

A pack is data, never code: a folder holding ``manifest.json``, ``state.db``,
``policy.md``, ``tools.json``, ``graph.json``, ``faults.json`` and
``tasks/<task id>.json``. Its id is the sha256 of its content. Reading a pack
validates everything and names the file and the field of the first problem.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arena.core.domain import Domain, FaultSpec, Knobs
from arena.core.domains import get_domain
from arena.core.episode import WorldRef
from arena.core.patterns import PatternError, compile_pattern
from arena.core.task import (
    CallPattern,
    DomainAssertion,
    ResponseAssertion,
    SideEffectAssertion,
    StateAssertion,
    Task,
    TraceAssertion,
)
from arena.core.toolkit import ToolSpec, iter_specs
from arena.core.verify import VERIFY_BOUND_S, Deadline, ReadOnlyGuard

SCHEMA_VERSION = 1
"""The pack schema version this gymloop reads and writes."""

REQUIRED_FILES = ("manifest.json", "state.db", "policy.md", "tools.json", "graph.json", "faults.json")
MAX_STATE_BYTES = 64 * 1024 * 1024
MAX_TEXT_BYTES = 4 * 1024 * 1024
MAX_TASKS = 5000
_TASK_FILE = re.compile(r"^[A-Za-z0-9_.-]{1,80}\.json$")
RESERVED_PREFIXES = ("_gymloop", "_gl_")
"""Names of world objects (tables, triggers, indexes, views) gymloop adds to every episode's world."""
_UNSAFE_NAME = re.compile(r"[\"'`\[\]\x00-\x1f]")


class PackError(ValueError):
    """A pack is refused; the message names the file and the field.

    Args:
        path: The pack folder (or archive) concerned.
        file: File inside the pack.
        message: What is wrong.
        field: Field inside the file, if any.
    """

    def __init__(self, path: str | Path, file: str, message: str, field: str | None = None) -> None:
        where = f"{file}" + (f" (field {field})" if field else "")
        super().__init__(f"pack {path}: {where}: {message}")
        self.path = str(path)
        self.file = file
        self.field = field


class Manifest(BaseModel):
    """A pack's identity and provenance.

    Attributes:
        id: sha256 of the pack's content (computed with this field empty).
        parent: Id of the pack this one is a variant of, if any.
        domain: Domain whose tools implement the pack's tools.
        schema_version: Pack schema version.
        seed: Generator seed.
        knobs: Complexity layers the generator applied.
        clock_start: ISO datetime at which every episode's clock starts.
        provenance: Generator name and version, request, weakness targets.
        created_by: Who or what made the pack.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = ""
    parent: str | None = None
    domain: str
    schema_version: int
    seed: int
    knobs: Knobs = Field(default_factory=dict)
    clock_start: str
    provenance: dict[str, Any] = Field(default_factory=dict)
    created_by: str = "gymloop"

    def world(self) -> WorldRef:
        """The world this pack was generated as (seed, knobs, parent): what an episode record names of it."""
        return WorldRef(seed=self.seed, knobs=dict(self.knobs), parent=self.parent)


@dataclass(frozen=True)
class Pack:
    """A pack held in memory.

    Attributes:
        manifest: Identity and provenance.
        state_db: Serialized SQLite starting world.
        policy: Business rules given to the agent.
        tools: Tool specs.
        graph: Weighted tool dependency graph (networkx node-link data).
        faults: Injected failure modes.
        tasks: Tasks, by id order.
    """

    manifest: Manifest
    state_db: bytes
    policy: str
    tools: list[ToolSpec]
    graph: dict[str, Any]
    faults: list[FaultSpec]
    tasks: list[Task]

    @property
    def id(self) -> str:
        """The pack's content id."""
        return self.manifest.id

    def task(self, task_id: str) -> Task:
        """Return the task with ``task_id``.

        Raises:
            KeyError: No such task, naming the id and the pack.
        """
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(f"task {task_id!r} is not in pack {self.id[:12]} ({self.manifest.domain})")


def _dump_json(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def pack_files(pack: Pack) -> dict[str, bytes]:
    """Return the pack's files as ``relative path -> bytes``, in canonical form."""
    files = {
        "manifest.json": _dump_json(pack.manifest.model_dump(mode="json")),
        "state.db": pack.state_db,
        "policy.md": pack.policy.encode("utf-8"),
        "tools.json": _dump_json([t.model_dump(mode="json") for t in pack.tools]),
        "graph.json": _dump_json(pack.graph),
        "faults.json": _dump_json([f.model_dump(mode="json") for f in pack.faults]),
    }
    for task in sorted(pack.tasks, key=lambda t: t.id):
        files[f"tasks/{task.id}.json"] = _dump_json(task.model_dump(mode="json", exclude=_absent(task)))
    return files


def _absent(task: Task) -> set[str]:
    """The optional task fields left out of its file when unset, so tasks written before they existed keep their ids."""
    return {name for name in ("conversation", "source", "tools") if getattr(task, name) is None}


def content_id(files: dict[str, bytes]) -> str:
    """Compute a pack's id from its files; the manifest is hashed with ``id`` empty."""
    digest = hashlib.sha256()
    for name in sorted(files):
        data = files[name]
        if name == "manifest.json":
            manifest = json.loads(data)
            manifest["id"] = ""
            data = _dump_json(manifest)
        digest.update(name.encode("utf-8") + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()


def build_pack(
    domain: Domain | str,
    *,
    seed: int = 0,
    knobs: Knobs | None = None,
    parent: str | None = None,
    provenance: dict[str, Any] | None = None,
    created_by: str = "gymloop",
) -> Pack:
    """Generate a pack from a domain's world generator.

    Args:
        domain: The domain, or its name.
        seed: Generator seed; the same seed and knobs give the same pack id.
        knobs: Complexity layers for the generator.
        parent: Id of the pack this one derives from.
        provenance: Generator details to record.
        created_by: Who or what made the pack.

    Returns:
        The pack, with its content id set.
    """
    dom = get_domain(domain) if isinstance(domain, str) else domain
    world = dom.generate(seed, dict(knobs or {}))
    manifest = Manifest(
        parent=parent,
        domain=dom.name,
        schema_version=SCHEMA_VERSION,
        seed=seed,
        knobs=dict(knobs or {}),
        clock_start=world.clock_start,
        provenance=provenance or {"generator": f"arena.gyms.{dom.name}", "version": 1},
        created_by=created_by,
    )
    pack = Pack(
        manifest=manifest,
        state_db=world.state_db,
        policy=dom.policy,
        tools=list(iter_specs(dom.tools)),
        graph=dom.graph_data(),
        faults=world.faults,
        tasks=sorted(world.tasks, key=lambda t: t.id),
    )
    return with_content_id(pack)


def with_content_id(pack: Pack) -> Pack:
    """Return ``pack`` with its manifest id recomputed from its content."""
    pid = content_id(pack_files(pack))
    manifest = pack.manifest.model_copy(update={"id": pid})
    return Pack(
        manifest=manifest,
        state_db=pack.state_db,
        policy=pack.policy,
        tools=pack.tools,
        graph=pack.graph,
        faults=pack.faults,
        tasks=pack.tasks,
    )


def write_pack(pack: Pack, dest: str | Path) -> Path:
    """Write ``pack`` to the folder ``dest`` atomically (all files or none).

    Raises:
        FileExistsError: ``dest`` exists and is not empty.
    """
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"cannot write pack {pack.id[:12]} to {dest}: folder is not empty")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".pack-", dir=dest.parent))
    try:
        for name, data in pack_files(pack).items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        if dest.exists():
            dest.rmdir()
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def _collect_files(root: Path) -> dict[str, bytes]:
    if not root.is_dir():
        raise PackError(root, ".", "not a folder")
    files: dict[str, bytes] = {}
    for name in REQUIRED_FILES:
        path = root / name
        if path.is_symlink():
            raise PackError(root, name, "symbolic links are not allowed in a pack")
        if not path.is_file():
            raise PackError(root, name, "missing file")
    for entry in sorted(root.iterdir()):
        rel = entry.name
        if entry.is_symlink():
            raise PackError(root, rel, "symbolic links are not allowed in a pack")
        if rel == "tasks" and entry.is_dir():
            continue
        if rel not in REQUIRED_FILES:
            raise PackError(root, rel, "unexpected file in pack")
        limit = MAX_STATE_BYTES if rel == "state.db" else MAX_TEXT_BYTES
        size = entry.stat().st_size
        if size > limit:
            raise PackError(root, rel, f"file is {size} bytes, over the limit of {limit}")
        files[rel] = entry.read_bytes()
    tasks_dir = root / "tasks"
    if not tasks_dir.is_dir() or tasks_dir.is_symlink():
        raise PackError(root, "tasks/", "missing folder")
    entries = sorted(tasks_dir.iterdir())
    if len(entries) > MAX_TASKS:
        raise PackError(root, "tasks/", f"{len(entries)} task files, over the limit of {MAX_TASKS}")
    for entry in entries:
        rel = f"tasks/{entry.name}"
        if entry.is_symlink() or not entry.is_file():
            raise PackError(root, rel, "not a regular file")
        if not _TASK_FILE.match(entry.name):
            raise PackError(root, rel, "task file names must match [A-Za-z0-9_.-]+.json")
        size = entry.stat().st_size
        if size > MAX_TEXT_BYTES:
            raise PackError(root, rel, f"file is {size} bytes, over the limit of {MAX_TEXT_BYTES}")
        files[rel] = entry.read_bytes()
    return files


def _parse_json(source: str | Path, name: str, data: bytes) -> Any:
    def refuse_constant(token: str) -> Any:
        raise ValueError(f"{token} is not valid JSON")

    try:
        return json.loads(data.decode("utf-8"), parse_constant=refuse_constant)
    except UnicodeDecodeError as exc:
        raise PackError(source, name, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise PackError(source, name, f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except ValueError as exc:
        raise PackError(source, name, f"malformed JSON: {exc}") from exc
    except RecursionError:
        raise PackError(source, name, "JSON nested too deep") from None


def _model(source: str | Path, name: str, model: type[BaseModel], data: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or None
        raise PackError(source, name, err["msg"], field) from exc


def _schema_columns(db: sqlite3.Connection) -> dict[str, set[str]]:
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {t: {r[1] for r in db.execute(f'PRAGMA table_info("{t}")')} for t in tables}


def _check_world_names(source: str | Path, db: sqlite3.Connection) -> None:
    """Refuse a world whose object names collide with gymloop's own or cannot be quoted safely."""
    for kind, name in db.execute("SELECT type, name FROM sqlite_master ORDER BY name"):
        if not isinstance(name, str) or name.startswith("sqlite_"):
            continue
        if name.lower().startswith(RESERVED_PREFIXES):
            raise PackError(source, "state.db", f"{kind} {name!r} uses a name gymloop reserves for its change log "
                            f"({', '.join(p + '*' for p in RESERVED_PREFIXES)}); rename it")
        if _UNSAFE_NAME.search(name):
            raise PackError(source, "state.db", f"{kind} {name[:80]!r} has a quote, bracket or control character "
                            "in its name; rename it")


def parse_pack(
    files: dict[str, bytes],
    source: str | Path = "<memory>",
    *,
    domains: Callable[[str], Domain] = get_domain,
) -> Pack:
    """Validate a pack's files and return the pack.

    Args:
        files: ``relative path -> bytes`` as read from a folder or an archive.
        source: Where the files came from, for error messages.
        domains: Looks a domain up by name (the built-in gyms by default).

    Raises:
        PackError: The first problem found, naming the file and the field.
    """
    for name in REQUIRED_FILES:
        if name not in files:
            raise PackError(source, name, "missing file")
    for name in files:
        if name not in REQUIRED_FILES and not (name.startswith("tasks/") and _TASK_FILE.match(name[6:])):
            raise PackError(source, name, "unexpected file in pack")
    raw_manifest = _parse_json(source, "manifest.json", files["manifest.json"])
    if not isinstance(raw_manifest, dict):
        raise PackError(source, "manifest.json", "must be a JSON object")
    version = raw_manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        raise PackError(
            source, "manifest.json", f"unknown schema version {version!r}; this gymloop reads {SCHEMA_VERSION}",
            "schema_version",
        )
    manifest: Manifest = _model(source, "manifest.json", Manifest, raw_manifest)
    try:
        domain = domains(manifest.domain)
    except KeyError as exc:
        raise PackError(source, "manifest.json", str(exc.args[0]), "domain") from exc

    tools_raw = _parse_json(source, "tools.json", files["tools.json"])
    if not isinstance(tools_raw, list):
        raise PackError(source, "tools.json", "must be a JSON list of tool specs")
    tools = [_model(source, "tools.json", ToolSpec, t) for t in tools_raw]
    tool_names = {t.name for t in tools}
    for i, spec in enumerate(tools):
        if spec.name not in domain.tools:
            raise PackError(source, "tools.json", f"tool {spec.name!r} is not implemented by domain {domain.name!r}",
                            f"{i}.name")
    faults_raw = _parse_json(source, "faults.json", files["faults.json"])
    if not isinstance(faults_raw, list):
        raise PackError(source, "faults.json", "must be a JSON list of faults")
    faults = [_model(source, "faults.json", FaultSpec, f) for f in faults_raw]
    fault_ids = {f.id for f in faults}
    for i, fault in enumerate(faults):
        if fault.tool not in tool_names:
            raise PackError(source, "faults.json", f"fault {fault.id!r} targets unknown tool {fault.tool!r}",
                            f"{i}.tool")
    graph = _parse_json(source, "graph.json", files["graph.json"])
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise PackError(source, "graph.json", "must be networkx node-link data with a 'nodes' list")
    for i, node in enumerate(graph["nodes"]):
        if not isinstance(node, dict) or node.get("id") not in tool_names:
            raise PackError(source, "graph.json", f"node {node!r} is not a tool of this pack", f"nodes.{i}")
    policy = files["policy.md"]
    try:
        policy_text = policy.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackError(source, "policy.md", "not UTF-8 text") from exc

    state = files["state.db"]
    if not state.startswith(b"SQLite format 3\0"):
        raise PackError(source, "state.db", "not a SQLite database")
    db = sqlite3.connect(":memory:")
    try:
        try:
            db.deserialize(state)
            columns = _schema_columns(db)
        except sqlite3.DatabaseError as exc:
            raise PackError(source, "state.db", f"unreadable SQLite database: {exc}") from exc
        _check_world_names(source, db)
        checks = _QueryCheck(db)
        tasks: list[Task] = []
        for name in sorted(n for n in files if n.startswith("tasks/")):
            task: Task = _model(source, name, Task, _parse_json(source, name, files[name]))
            if f"tasks/{task.id}.json" != name:
                raise PackError(source, name, f"task id {task.id!r} does not match its file name", "id")
            _check_task(source, name, task, tool_names, fault_ids, columns, checks, set(domain.checks))
            tasks.append(task)
    finally:
        db.close()

    expected = content_id(files)
    if manifest.id != expected:
        raise PackError(source, "manifest.json", f"id {manifest.id!r} does not match the content hash {expected}",
                        "id")
    return Pack(
        manifest=manifest,
        state_db=state,
        policy=policy_text,
        tools=tools,
        graph=graph,
        faults=faults,
        tasks=tasks,
    )


class _QueryCheck:
    """Runs a pack's state queries on its starting world as a verification would.

    Read-only, and each task's queries together within the verification's time bound (started per task).
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.guard = ReadOnlyGuard(db)
        self.deadline = Deadline(db)

    def refusal(self, sql: str) -> str | None:
        """Why the query cannot be a check (it writes, does not compile, or is too slow), or ``None``."""
        shown = " ".join(sql.split())
        shown = shown[:200] + ("..." if len(shown) > 200 else "")
        with self.guard:
            try:
                self.db.execute("EXPLAIN " + sql)
            except sqlite3.DatabaseError as exc:
                if "not authorized" in str(exc):
                    return f"query {shown!r} writes to or changes the world; checks may only read it"
                return f"query refused: {exc}"
            try:
                self.db.execute(sql).fetchall()
            except sqlite3.DatabaseError as exc:
                if self.deadline.passed:
                    return (f"query {shown!r} runs past the verification's time bound of {VERIFY_BOUND_S:g} s "
                            "(the task's checks together, on the pack's starting world)")
                return f"query {shown!r} fails on the pack's starting world: {exc}"
        return None


def _check_task(
    source: str | Path,
    name: str,
    task: Task,
    tool_names: set[str],
    fault_ids: set[str],
    columns: dict[str, set[str]],
    checks: _QueryCheck,
    domain_checks: set[str],
) -> None:
    for i, tool in enumerate(task.tools or []):
        if tool not in tool_names:
            raise PackError(source, name, f"the task offers unknown tool {tool!r}", f"tools.{i}")
    for i, step in enumerate(task.gold.steps):
        if step.tool not in tool_names:
            raise PackError(source, name, f"gold step calls unknown tool {step.tool!r}", f"gold.steps.{i}.tool")
    for i, call in enumerate(task.intent.calls):
        if call.tool not in tool_names:
            raise PackError(source, name, f"intent calls unknown tool {call.tool!r}", f"intent.calls.{i}.tool")
    for i, fid in enumerate(task.faults):
        if fid not in fault_ids:
            raise PackError(source, name, f"unknown fault {fid!r}", f"faults.{i}")
    checks.deadline.start(VERIFY_BOUND_S)
    try:
        _check_assertions(source, name, task, tool_names, columns, checks, domain_checks)
    finally:
        checks.deadline.stop()


def _check_assertions(source: str | Path, name: str, task: Task, tool_names: set[str],
                      columns: dict[str, set[str]], checks: _QueryCheck, domain_checks: set[str]) -> None:
    for i, assertion in enumerate(task.assertions):
        where = f"assertions.{i}"
        if isinstance(assertion, StateAssertion):
            refused = checks.refusal(assertion.sql)
            if refused is not None:
                raise PackError(source, name, refused, f"{where}.sql")
        elif isinstance(assertion, TraceAssertion):
            patterns: list[CallPattern] = [*assertion.required, *assertion.forbidden]
            for pattern in patterns:
                if pattern.tool not in tool_names:
                    raise PackError(source, name, f"pattern names unknown tool {pattern.tool!r}", where)
            for a, b in assertion.order:
                if not (0 <= a < len(assertion.required) and 0 <= b < len(assertion.required)):
                    raise PackError(source, name, f"order pair ({a}, {b}) is outside 'required'", f"{where}.order")
        elif isinstance(assertion, ResponseAssertion):
            named = [(f"{where}.forbidden_patterns.{j}", p) for j, p in enumerate(assertion.forbidden_patterns)]
            if assertion.id_pattern is not None:
                named.append((f"{where}.id_pattern", assertion.id_pattern))
            for field, regex in named:
                try:
                    compile_pattern(regex)
                except PatternError as exc:
                    raise PackError(source, name, str(exc), field) from None
        elif isinstance(assertion, DomainAssertion):
            if assertion.check not in domain_checks:
                raise PackError(source, name, f"the gym runs no check {assertion.check!r}", f"{where}.check")
        elif isinstance(assertion, SideEffectAssertion):
            for j, scope in enumerate(assertion.allowed):
                if scope.table not in columns:
                    raise PackError(source, name, f"unknown table {scope.table!r}", f"{where}.allowed.{j}.table")
                for col in scope.columns or []:
                    if col not in columns[scope.table]:
                        raise PackError(source, name, f"unknown column {scope.table}.{col}",
                                        f"{where}.allowed.{j}.columns")


def read_pack(path: str | Path, *, domains: Callable[[str], Domain] = get_domain) -> Pack:
    """Read and validate the pack in folder ``path``.

    Args:
        path: The pack folder.
        domains: Looks a domain up by name (the built-in gyms by default).

    Raises:
        PackError: The pack is refused; the message names the file and the field.
    """
    root = Path(path)
    return parse_pack(_collect_files(root), root, domains=domains)
