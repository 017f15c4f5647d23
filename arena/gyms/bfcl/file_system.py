"""BFCL's file system (``GorillaFileSystem``): directories and files, a current directory, shell-like tools.

The world keeps the file system as BFCL's objects are linked: a node per directory or file (a directory knows its
parent and its contents), and each directory's contents as an ordered list of entries. Contents can be shared:
copying a directory gives the copy new entries pointing at the same child nodes, and moving one hands the moved
directory's entries to its new node, whose children still name the old one as their parent. Listing order is
insertion order; a removed entry that comes back goes last.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from arena.core.toolkit import ToolContext, tool
from arena.gyms.bfcl.classes import FunctionClass, Query
from arena.gyms.bfcl.store import PythonError, as_bfcl, next_value

SCHEMA = """
CREATE TABLE fs_systems (id TEXT PRIMARY KEY, task TEXT NOT NULL, root INTEGER NOT NULL, cwd INTEGER NOT NULL,
                         long_context INTEGER NOT NULL);
CREATE TABLE fs_nodes (id TEXT PRIMARY KEY, task TEXT NOT NULL, node INTEGER NOT NULL, kind TEXT NOT NULL,
                       name TEXT NOT NULL, content TEXT, parent INTEGER, contents INTEGER);
CREATE TABLE fs_entries (id TEXT PRIMARY KEY, task TEXT NOT NULL, dict INTEGER NOT NULL, seq INTEGER NOT NULL,
                         name TEXT NOT NULL, node INTEGER NOT NULL);
CREATE INDEX fs_nodes_by_task ON fs_nodes (task, node);
CREATE INDEX fs_entries_by_dict ON fs_entries (task, dict, seq);
"""

BAD_NAME_CHARS = '|/\\?%*:"><'
"""Characters a new file or directory name may not hold."""


class _Fs:
    """The task's file system, read and written through the episode's connection."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.task = ctx.task_id
        system = ctx.one("SELECT root, cwd FROM fs_systems WHERE id = ?", (self.task,))
        if system is None:
            raise PythonError("name 'GorillaFileSystem' is not defined: this task has no file system")
        self.root: int = system["root"]
        self.cwd: int = system["cwd"]

    def node(self, node: int) -> dict[str, Any]:
        found = self.ctx.one("SELECT node, kind, name, content, parent, contents FROM fs_nodes WHERE task = ? AND "
                             "node = ?", (self.task, node))
        if found is None:
            raise LookupError(f"file system node {node} of task {self.task} is missing")
        return found

    def entries(self, directory: dict[str, Any]) -> list[tuple[str, int]]:
        rows = self.ctx.all("SELECT name, node FROM fs_entries WHERE task = ? AND dict = ? ORDER BY seq",
                            (self.task, directory["contents"]))
        return [(r["name"], r["node"]) for r in rows]

    def lookup(self, directory: dict[str, Any], name: str) -> dict[str, Any] | None:
        row = self.ctx.one("SELECT node FROM fs_entries WHERE task = ? AND dict = ? AND name = ?",
                           (self.task, directory["contents"], name))
        return None if row is None else self.node(row["node"])

    def item(self, directory: dict[str, Any], name: str) -> dict[str, Any] | None:
        """A directory's item by name, ``.`` being the directory itself."""
        return directory if name == "." else self.lookup(directory, name)

    def current(self) -> dict[str, Any]:
        return self.node(self.cwd)

    def set_cwd(self, node: int) -> None:
        self.ctx.conn.execute("UPDATE fs_systems SET cwd = ? WHERE id = ?", (node, self.task))
        self.cwd = node

    def _new_node(self, kind: str, name: str, content: str | None, parent: int | None) -> int:
        node = next_value(self.ctx, "fs_nodes", "node")
        contents = None
        if kind == "dir":
            row = self.ctx.one("SELECT COALESCE(MAX(contents), -1) + 1 AS n FROM fs_nodes WHERE task = ?",
                               (self.task,))
            contents = int(row["n"]) if row else 0
        self.ctx.conn.execute("INSERT INTO fs_nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                              (f"{self.task}/n{node}", self.task, node, kind, name, content, parent, contents))
        return node

    def put(self, directory: dict[str, Any], name: str, node: int) -> None:
        seq = next_value(self.ctx, "fs_entries", "seq")
        self.ctx.conn.execute("INSERT INTO fs_entries VALUES (?, ?, ?, ?, ?, ?)",
                              (f"{self.task}/e{seq}", self.task, directory["contents"], seq, name, node))

    def pop(self, directory: dict[str, Any], name: str) -> None:
        self.ctx.conn.execute("DELETE FROM fs_entries WHERE task = ? AND dict = ? AND name = ?",
                              (self.task, directory["contents"], name))

    def add_file(self, directory: dict[str, Any], name: str, content: str = "") -> None:
        if self.lookup(directory, name) is not None:
            raise PythonError(f"File '{name}' already exists in directory '{directory['name']}'.")
        self.put(directory, name, self._new_node("file", name, content, None))

    def add_directory(self, directory: dict[str, Any], name: str) -> dict[str, Any]:
        if self.lookup(directory, name) is not None:
            raise PythonError(f"Directory '{name}' already exists in directory '{directory['name']}'.")
        node = self._new_node("dir", name, None, directory["node"])
        self.put(directory, name, node)
        return self.node(node)

    def share_contents(self, target: dict[str, Any], source: dict[str, Any]) -> None:
        """``target.contents = source.contents``: both directories now hold the same entries."""
        self.ctx.conn.execute("UPDATE fs_nodes SET contents = ? WHERE task = ? AND node = ?",
                              (source["contents"], self.task, target["node"]))

    def copy_contents(self, target: dict[str, Any], source: dict[str, Any]) -> None:
        """``target.contents = source.contents.copy()``: new entries, the same children."""
        for name, node in self.entries(source):
            self.put(target, name, node)

    def write(self, node: dict[str, Any], content: str) -> None:
        self.ctx.conn.execute("UPDATE fs_nodes SET content = ? WHERE task = ? AND node = ?",
                              (content, self.task, node["node"]))

    def navigate(self, path: str | None) -> dict[str, Any]:
        """The directory at ``path`` from the current one (from the root when it starts with ``/``), or an error."""
        if path is None or path == ".":
            return self.current()
        if path == "/":
            return self.node(self.root)
        here = self.current() if not path.startswith("/") else self.node(self.root)
        for name in path.strip("/").split("/"):
            found = self.item(here, name)
            if found is None or found["kind"] != "dir":
                return {"error": f"cd: '{path}': No such file or directory"}
            here = found
        return here

    def same_tree(self, a: dict[str, Any], b: dict[str, Any]) -> bool:
        """Whether two nodes are equal as BFCL compares them (names and contents, recursively)."""
        query = _query(self.ctx)
        return bool(_tree(query, self.task, a["node"]) == _tree(query, self.task, b["node"]))


def _query(ctx: ToolContext) -> Query:
    def query(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return ctx.conn.execute(sql, params).fetchall()

    return query


def _valid_name(name: str) -> bool:
    return not any(c in name for c in BAD_NAME_CHARS)


def _is_dir(node: dict[str, Any] | None) -> bool:
    return node is not None and node["kind"] == "dir"


def _is_file(node: dict[str, Any] | None) -> bool:
    return node is not None and node["kind"] == "file"


@tool(mode="read", entity="directory", operation="get")
@as_bfcl
def pwd(ctx: ToolContext) -> dict[str, Any]:
    """Return the current working directory's path, from the root directory's name down."""
    fs = _Fs(ctx)
    path: list[str] = []
    node: dict[str, Any] | None = fs.current()
    while node is not None:
        path.append(node["name"])
        node = fs.node(node["parent"]) if node["parent"] is not None else None
    return {"current_working_directory": "/" + "/".join(reversed(path))}


@tool(mode="read", entity="directory", operation="list")
@as_bfcl
def ls(ctx: ToolContext, a: bool = False) -> dict[str, Any]:
    """List the contents of the current directory.

    Args:
        a: Show hidden files and directories (names starting with a dot) too. Defaults to False.
    """
    fs = _Fs(ctx)
    names = [name for name, _ in fs.entries(fs.current())]
    if not a:
        names = [n for n in names if not n.startswith(".")]
    return {"current_directory_content": names}


@tool(mode="write", entity="directory", operation="action")
@as_bfcl
def cd(ctx: ToolContext, folder: str) -> dict[str, Any]:
    """Change the current working directory, one level at a time (a name, "..", "." or "/").

    Args:
        folder: The directory to change to: a directory of the current one, ".." for the parent, "/" for the root.
    """
    fs = _Fs(ctx)
    folder = folder.rstrip("/") or "/"
    if folder not in {".", "..", "/"} and "/" in folder:
        return {"error": f"cd: {folder}: Unsupported path. Only one folder level at a time is supported."}
    if folder == "..":
        here = fs.current()
        if here["parent"] is not None:
            fs.set_cwd(here["parent"])
            return {}
        if fs.same_tree(fs.node(fs.root), here):
            return {"error": "Current directory is already the root. Cannot go back."}
        return {"error": "cd: ..: No such directory"}
    target = fs.navigate(folder)
    if "error" in target:
        return target
    fs.set_cwd(target["node"])
    return {"current_working_directory": target["name"]}


@tool(mode="write", entity="directory", operation="create")
@as_bfcl
def mkdir(ctx: ToolContext, dir_name: str) -> dict[str, Any] | None:
    """Create a directory in the current directory.

    Args:
        dir_name: The new directory's name (no path: it is made in the current directory).
    """
    fs = _Fs(ctx)
    if not _valid_name(dir_name):
        return {"error": f"mkdir: cannot create directory '{dir_name}': Invalid character"}
    here = fs.current()
    if fs.lookup(here, dir_name) is not None:
        return {"error": f"mkdir: cannot create directory '{dir_name}': File exists"}
    fs.add_directory(here, dir_name)
    return None


@tool(mode="write", entity="file", operation="create")
@as_bfcl
def touch(ctx: ToolContext, file_name: str) -> dict[str, Any] | None:
    """Create an empty file, of any extension, in the current directory.

    Args:
        file_name: The new file's name (no path: it is made in the current directory).
    """
    fs = _Fs(ctx)
    if not _valid_name(file_name):
        return {"error": f"touch: cannot touch '{file_name}': Invalid character"}
    here = fs.current()
    if fs.lookup(here, file_name) is not None:
        return {"error": f"touch: cannot touch '{file_name}': File exists"}
    fs.add_file(here, file_name)
    return None


@tool(mode="write", entity="file", operation="update")
@as_bfcl
def echo(ctx: ToolContext, content: str, file_name: str | None = None) -> dict[str, Any] | None:
    """Write content into an existing file of the current directory (replacing it), or show it in the terminal.

    Args:
        content: The content to write or show.
        file_name: The file of the current directory to write to; without one the content is shown.
    """
    if file_name is None:
        return {"terminal_output": content}
    if not _valid_name(file_name):
        return {"error": f"echo: cannot write to '{file_name}': Invalid character"}
    if not file_name:
        return {"terminal_output": content}
    fs = _Fs(ctx)
    found = fs.lookup(fs.current(), file_name)
    if found is None:
        return {"error": f"echo: cannot write to '{file_name}': No such file"}
    if found["kind"] != "file":
        raise PythonError("'Directory' object has no attribute '_write'")
    fs.write(found, content)
    return None


@tool(mode="read", entity="file", operation="get")
@as_bfcl
def cat(ctx: ToolContext, file_name: str) -> dict[str, Any]:
    """Show the content of a file of the current directory.

    Args:
        file_name: The file's name in the current directory (no path).
    """
    if not _valid_name(file_name):
        return {"error": f"cat: '{file_name}': Invalid character"}
    fs = _Fs(ctx)
    found = fs.lookup(fs.current(), file_name)
    if found is None:
        return {"error": f"cat: '{file_name}': No such file or directory"}
    if found["kind"] != "file":
        return {"error": f"cat: '{file_name}': Is a directory"}
    return {"file_content": found["content"]}


@tool(mode="read", entity="file", operation="search")
@as_bfcl
def find(ctx: ToolContext, path: str = ".", name: str | None = None) -> dict[str, Any]:
    """Find the files and directories under a path (recursively) whose names contain a text.

    Args:
        path: The directory to search from. Defaults to the current directory (".").
        name: Text the names must contain; without it every file and directory is listed.
    """
    fs = _Fs(ctx)
    start = fs.navigate(path)
    if "error" in start:
        message = str(start["error"])
        return {"error": message.replace("cd:", "find:", 1)} if message.startswith("cd:") else start
    matches: list[str] = []

    def walk(directory: dict[str, Any], base: str) -> None:
        for item_name, node in fs.entries(directory):
            item_path = f"{base}/{item_name}"
            if name is None or name in item_name:
                matches.append(item_path)
            child = fs.node(node)
            if child["kind"] == "dir":
                walk(child, item_path)

    walk(start, path.rstrip("/"))
    return {"matches": matches}


@tool(mode="read", entity="file", operation="action")
@as_bfcl
def wc(ctx: ToolContext, file_name: str, mode: str = "l") -> dict[str, Any]:
    """Count the lines, words or characters of a file of the current directory.

    Args:
        file_name: The file's name in the current directory.
        mode: "l" for lines, "w" for words, "c" for characters. Defaults to "l".
    """
    if mode not in ("l", "w", "c"):
        return {"error": f"wc: invalid mode '{mode}'"}
    fs = _Fs(ctx)
    found = fs.lookup(fs.current(), file_name)
    if not _is_file(found):
        return {"error": f"wc: {file_name}: No such file or directory"}
    content = str(found["content"]) if found else ""
    if mode == "l":
        return {"count": len(content.splitlines()), "type": "lines"}
    if mode == "w":
        return {"count": len(content.split()), "type": "words"}
    return {"count": len(content), "type": "characters"}


def _file_of(ctx: ToolContext, file_name: str) -> str | None:
    fs = _Fs(ctx)
    found = fs.lookup(fs.current(), file_name)
    return str(found["content"]) if found is not None and found["kind"] == "file" else None


@tool(mode="read", entity="file", operation="action")
@as_bfcl
def sort(ctx: ToolContext, file_name: str) -> dict[str, Any]:
    """Show a file of the current directory with its lines sorted.

    Args:
        file_name: The file's name in the current directory.
    """
    content = _file_of(ctx, file_name)
    if content is None:
        return {"error": f"sort: {file_name}: No such file or directory"}
    return {"sorted_content": "\n".join(sorted(content.splitlines()))}


@tool(mode="read", entity="file", operation="search")
@as_bfcl
def grep(ctx: ToolContext, file_name: str, pattern: str) -> dict[str, Any]:
    """Show the lines of a file of the current directory that contain a text.

    Args:
        file_name: The file's name in the current directory (no path).
        pattern: The text the lines must contain.
    """
    content = _file_of(ctx, file_name)
    if content is None:
        return {"error": f"grep: {file_name}: No such file or directory"}
    return {"matching_lines": [line for line in content.splitlines() if pattern in line]}


@tool(mode="read", entity="directory", operation="action")
@as_bfcl
def du(ctx: ToolContext, human_readable: bool = False) -> dict[str, Any]:
    """Estimate the disk usage of the current directory and everything under it.

    Args:
        human_readable: Show the size in units (B, KB, MB, ...) rather than bytes. Defaults to False.
    """
    fs = _Fs(ctx)

    def size(node: dict[str, Any]) -> int:
        if node["kind"] == "file":
            return len(str(node["content"]).encode("utf-8"))
        return sum(size(fs.node(child)) for _, child in fs.entries(node))

    total: float = size(fs.current())
    if not human_readable:
        return {"disk_usage": f"{int(total)} bytes"}
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if total < 1024:
            return {"disk_usage": f"{total:.2f} {unit}"}
        total /= 1024
    return {"disk_usage": f"{total:.2f} PB"}


@tool(mode="read", entity="file", operation="action")
@as_bfcl
def tail(ctx: ToolContext, file_name: str, lines: int = 10) -> dict[str, Any]:
    """Show the last lines of a file of the current directory.

    Args:
        file_name: The file's name in the current directory (no path).
        lines: How many lines to show from the end. Defaults to 10.
    """
    content = _file_of(ctx, file_name)
    if content is None:
        return {"error": f"tail: {file_name}: No such file or directory"}
    all_lines = content.splitlines()
    lines = min(lines, len(all_lines))
    return {"last_lines": "\n".join(all_lines[-lines:])}


@tool(mode="read", entity="file", operation="action")
@as_bfcl
def diff(ctx: ToolContext, file_name1: str, file_name2: str) -> dict[str, Any]:
    """Compare two files of the current directory line by line.

    Args:
        file_name1: The first file's name in the current directory.
        file_name2: The second file's name in the current directory.
    """
    first, second = _file_of(ctx, file_name1), _file_of(ctx, file_name2)
    if first is None or second is None:
        return {"error": f"diff: {file_name1} or {file_name2}: No such file or directory"}
    changed = [f"- {a}\n+ {b}" for a, b in zip(first.splitlines(), second.splitlines(), strict=False) if a != b]
    return {"diff_lines": "\n".join(changed)}


@tool(mode="write", entity="file", operation="action")
@as_bfcl
def mv(ctx: ToolContext, source: str, destination: str) -> dict[str, Any]:
    """Move a file or directory of the current directory into a directory of it, or rename it.

    Args:
        source: The name of the file or directory to move, in the current directory.
        destination: A directory of the current directory to move it into, or its new name (no path).
    """
    fs = _Fs(ctx)
    here = fs.current()
    item = fs.lookup(here, source)
    if item is None:
        return {"error": f"mv: cannot move '{source}': No such file or directory"}
    if "/" in destination:
        return {"error": "mv: path not allowed in destination. Provide only a file or directory name."}
    target = fs.lookup(here, destination)
    if target is not None:
        if target["kind"] != "dir":
            return {"error": f"mv: cannot move '{source}' to '{destination}': Not a directory"}
        if fs.lookup(target, source) is not None:
            return {"error": f"mv: cannot move '{source}' to '{destination}/{source}': File exists"}
        fs.pop(here, source)
        _place(fs, target, source, item, share=True)
        return {"result": f"'{source}' moved to '{destination}/{source}'"}
    fs.pop(here, source)
    _place(fs, here, destination, item, share=True)
    return {"result": f"'{source}' moved to '{destination}'"}


def _place(fs: _Fs, directory: dict[str, Any], name: str, item: dict[str, Any], *, share: bool) -> None:
    """Make ``name`` in ``directory`` from ``item``: a move shares a directory's contents, a copy copies them."""
    if item["kind"] == "file":
        fs.add_file(directory, name, str(item["content"]))
        return
    made = fs.add_directory(directory, name)
    if share:
        fs.share_contents(made, item)
    else:
        fs.copy_contents(made, item)


@tool(mode="write", entity="file", operation="delete")
@as_bfcl
def rm(ctx: ToolContext, file_name: str) -> dict[str, Any]:
    """Remove a file or directory of the current directory.

    Args:
        file_name: The name of the file or directory to remove.
    """
    fs = _Fs(ctx)
    here = fs.current()
    if fs.lookup(here, file_name) is None:
        return {"error": f"rm: cannot remove '{file_name}': No such file or directory"}
    fs.pop(here, file_name)
    return {"result": f"'{file_name}' removed"}


@tool(mode="write", entity="directory", operation="delete")
@as_bfcl
def rmdir(ctx: ToolContext, dir_name: str) -> dict[str, Any]:
    """Remove an empty directory of the current directory.

    Args:
        dir_name: The name of the directory to remove, in the current directory.
    """
    fs = _Fs(ctx)
    here = fs.current()
    item = fs.lookup(here, dir_name)
    if item is None:
        return {"error": f"rmdir: cannot remove '{dir_name}': No such file or directory"}
    if item["kind"] != "dir":
        return {"error": f"rmdir: cannot remove '{dir_name}': Not a directory"}
    if fs.entries(item):
        return {"error": f"rmdir: cannot remove '{dir_name}': Directory not empty"}
    fs.pop(here, dir_name)
    return {"result": f"'{dir_name}' removed"}


@tool(mode="write", entity="file", operation="create")
@as_bfcl
def cp(ctx: ToolContext, source: str, destination: str) -> dict[str, Any]:
    """Copy a file or directory of the current directory into a directory of it, or to a new name.

    Args:
        source: The name of the file or directory to copy, in the current directory.
        destination: A directory of the current directory to copy it into, or the copy's name (no path).
    """
    fs = _Fs(ctx)
    here = fs.current()
    item = fs.lookup(here, source)
    if item is None:
        return {"error": f"cp: cannot copy '{source}': No such file or directory"}
    if "/" in destination:
        return {"error": "cp: path not allowed in destination. Provide only a file or directory name."}
    target = fs.lookup(here, destination)
    if target is not None:
        if target["kind"] != "dir":
            return {"error": f"cp: cannot copy '{source}' to '{destination}': Not a directory"}
        _place(fs, target, source, item, share=False)
        return {"result": f"'{source}' copied to '{destination}/{source}'"}
    _place(fs, here, destination, item, share=False)
    return {"result": f"'{source}' copied to '{destination}'"}


TOOLS = (pwd, ls, cd, mkdir, touch, echo, cat, find, wc, sort, grep, du, tail, diff, mv, rm, rmdir, cp)


def load(conn: sqlite3.Connection, task: str, config: dict[str, Any], long_context: dict[str, Any] | None) -> None:
    """Load a task's file system from BFCL's configuration (``{"root": {name: {"type": "directory", ...}}}``)."""
    counter = {"node": 0, "dict": 0, "seq": 0}
    extension = str(long_context["FILE_CONTENT_EXTENSION"]) if long_context else ""
    untouched = set(long_context["FILES_TAIL_USED"]) if long_context else set()
    populate = list(long_context["POPULATE_FILE_EXTENSION"]) if long_context else []

    def new(kind: str, name: str, content: str | None, parent: int | None) -> tuple[int, int | None]:
        node = counter["node"]
        counter["node"] += 1
        contents = None
        if kind == "dir":
            contents = counter["dict"]
            counter["dict"] += 1
        conn.execute("INSERT INTO fs_nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (f"{task}/n{node}", task, node, kind, name, content, parent, contents))
        return node, contents

    def put(contents: int, name: str, node: int) -> None:
        seq = counter["seq"]
        counter["seq"] += 1
        conn.execute("INSERT INTO fs_entries VALUES (?, ?, ?, ?, ?, ?)",
                     (f"{task}/e{seq}", task, contents, seq, name, node))

    def fill(items: dict[str, Any], node: int, contents: int) -> None:
        bottom = True
        for name, data in items.items():
            if data["type"] == "directory":
                bottom = False
                child, child_contents = new("dir", name, None, node)
                fill(data["contents"], child, int(child_contents or 0))
                put(contents, name, child)
            elif data["type"] == "file":
                content = str(data["content"])
                if long_context and name not in untouched:
                    content += extension
                put(contents, name, new("file", name, content, None)[0])
        if bottom and long_context:
            for name in populate:
                put(contents, str(name), new("file", str(name), "", None)[0])

    tree = config.get("root")
    if tree:
        root_name = next(iter(tree))
        root, root_contents = new("dir", root_name, None, None)
        fill(tree[root_name]["contents"], root, int(root_contents or 0))
    else:
        root, _ = new("dir", "/", None, None)
    conn.execute("INSERT INTO fs_systems VALUES (?, ?, ?, ?, ?)", (task, task, root, root, int(bool(long_context))))


def _tree(query: Query, task: str, node: int) -> Any:
    nodes = {r[0]: r[1:] for r in query("SELECT node, kind, name, content, contents FROM fs_nodes WHERE task = ?",
                                        (task,))}
    entries: dict[int, list[tuple[str, int]]] = {}
    for contents, name, child in query("SELECT dict, name, node FROM fs_entries WHERE task = ? ORDER BY seq", (task,)):
        entries.setdefault(contents, []).append((name, child))

    def build(n: int, above: frozenset[int]) -> Any:
        kind, name, content, contents = nodes[n]
        if kind == "file":
            return {"file": name, "content": content}
        if n in above:  # a directory made to hold itself (copied into itself): BFCL's objects would never end
            return {"directory": name, "cycle": True}
        return {"directory": name, "contents": {k: build(c, above | {n}) for k, c in entries.get(contents, [])}}

    return build(node, frozenset())


def state(query: Query, task: str) -> dict[str, Any]:
    """The file system's public attributes: the tree from the root, and whether it holds long-context data."""
    root, long_context = query("SELECT root, long_context FROM fs_systems WHERE id = ?", (task,))[0]
    return {"root": _tree(query, task, int(root)), "long_context": bool(long_context)}


FILE_SYSTEM = FunctionClass(name="GorillaFileSystem", label="file system", schema=SCHEMA, load=load, state=state,
                            tools={t.name: t for t in TOOLS})
"""The file system class."""
