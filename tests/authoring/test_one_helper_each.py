"""The kit's helpers are written once: no built-in gym or kit module copies picking, ordering, fetching, dates,
amounts or the search index (read from the source: no gym is imported or run)."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import TypeGuard

import arena.authoring as kit
from arena.core import values

ARENA = Path(__file__).resolve().parents[2] / "arena"
GYMS = [ARENA / "gyms" / name for name in ("crm", "helpdesk", "procurement", "tracker")]
SOURCES = [*sorted(p for root in [ARENA / "authoring", *GYMS] for p in root.rglob("*.py")),
           ARENA / "core" / "values.py"]
"""The kit (with its starter gym), the four built-in gyms and the values module the kit reads through."""
HELPERS = {"pick", "pick_where", "mix", "nth", "shuffled", "day_between", "fetch", "select", "insert_rows", "search",
           "finds_only", "index_row", "write_index", "add_to_index", "iso_date", "positive_amount", "cents",
           "legacy_date", "legacy_amount", "read_date", "read_amount", "amounts", "dates", "amount_spellings",
           "date_spellings", "parse_date", "parse_amount"}
"""The helpers a gym takes from the kit (and the kit from ``arena.core.values``)."""

SMALLEST = 12
"""Syntax nodes a function body needs to count as a helper: ``return search(ctx, "user", query)``, a tool's whole
body, has 9; ``return rng.sample(rows, min(n, len(rows)))`` has 18."""


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _functions(path: Path) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(_tree(path)) if isinstance(n, ast.FunctionDef)]


def _body(fn: ast.FunctionDef) -> tuple[str, int]:
    """The function's body without its docstring, its parameters renamed by position, and its count of nodes."""
    body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
    args = {a.arg: f"arg{i}" for i, a in enumerate(fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs)}
    dumped = "\n".join(ast.dump(statement) for statement in body)
    renamed = re.sub(r"Name\(id='(\w+)'", lambda m: f"Name(id='{args.get(m[1], m[1])}'", dumped)
    return renamed, sum(1 for statement in body for _ in ast.walk(statement))


def test_every_named_helper_is_the_kits() -> None:
    assert not [name for name in HELPERS if not hasattr(kit, name) and not hasattr(values, name)]
    gyms = [path for path in SOURCES if "gyms" in path.parts or "starter" in path.parts]
    found = [f"{path.relative_to(ARENA)}:{fn.lineno} {fn.name}" for path in gyms
             for fn in _functions(path) if fn.name.lstrip("_") in HELPERS]
    assert not found, f"gyms define their own copy of a kit helper: {found}"


def test_no_function_body_is_written_twice() -> None:
    bodies: dict[str, list[str]] = defaultdict(list)
    for path in SOURCES:
        for fn in _functions(path):
            body, size = _body(fn)
            if size >= SMALLEST:
                bodies[body].append(f"{path.relative_to(ARENA)}:{fn.lineno} {fn.name}")
    copies = [where for where in bodies.values() if len(where) > 1]
    assert not copies, f"the same function written more than once: {copies}"


def _is_len_of(node: ast.AST, rows: ast.AST) -> bool:
    """``len(rows)``."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
            and len(node.args) == 1 and ast.dump(node.args[0]) == ast.dump(rows))


def _is_inline_pick(node: ast.AST) -> bool:
    """``rng.sample(rows, min(n, len(rows)))`` or ``rng.sample(rows, len(rows))``: the kit's ``pick`` written out."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "sample"
            and len(node.args) == 2 and isinstance(node.args[1], ast.Call)):
        return False
    rows, bound = node.args
    if _is_len_of(bound, rows):
        return True
    return isinstance(bound, ast.Call) and isinstance(bound.func, ast.Name) and bound.func.id == "min" and any(
        _is_len_of(a, rows) for a in bound.args)


def _amount_spellings_listed(node: ast.AST) -> bool:
    """A list, tuple or set of f-strings writing one value twice with two decimals: an amount's spellings."""
    if not isinstance(node, ast.List | ast.Tuple | ast.Set):
        return False
    written = [ast.dump(v.value) for e in node.elts if isinstance(e, ast.JoinedStr) for v in e.values
               if isinstance(v, ast.FormattedValue) and v.format_spec is not None
               and ast.unparse(v.format_spec).endswith(".2f'")]
    return len(written) > len(set(written))


def _legacy_amount_written(node: ast.AST) -> bool:
    """An f-string writing a currency sign right before a two-decimal field (``f"${x:,.2f}"``): a legacy amount."""
    if not isinstance(node, ast.JoinedStr):
        return False
    return any(isinstance(before, ast.Constant) and str(before.value).endswith(("$", "£", "€"))
               and isinstance(after, ast.FormattedValue) and after.format_spec is not None
               and ast.unparse(after.format_spec).endswith(".2f'")
               for before, after in zip(node.values, node.values[1:], strict=False))


def _day_of_span_written(node: ast.AST) -> bool:
    """``start + timedelta(days=rng.randint(0, span))`` with a computed span: the kit's ``day_between`` written out."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.right, ast.Call)
            and isinstance(node.right.func, ast.Name) and node.right.func.id == "timedelta"):
        return False
    days = [k.value for k in node.right.keywords if k.arg == "days"] + node.right.args[:1]
    return any(isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "randint"
               and len(d.args) == 2 and isinstance(d.args[0], ast.Constant) and d.args[0].value == 0
               and not isinstance(d.args[1], ast.Constant) for d in days)


def _cents_written(node: ast.AST) -> bool:
    """``round(x + 1e-9, 2)``: the kit's ``cents`` written out."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round"
            and len(node.args) == 2 and isinstance(node.args[0], ast.BinOp) and isinstance(node.args[0].op, ast.Add)
            and isinstance(node.args[0].right, ast.Constant) and node.args[0].right.value == 1e-9)


def test_picks_and_amount_spellings_are_not_written_out_again() -> None:
    formatting = [p for p in sorted(ARENA.rglob("*.py"))
                  if p != ARENA / "core" / "values.py" and ".2f}" in p.read_text(encoding="utf-8")]
    spelled_out = [f"{path.relative_to(ARENA)}:{getattr(node, 'lineno', 0)}" for path in formatting
                   for node in ast.walk(_tree(path)) if _amount_spellings_listed(node)]
    legacy_amounts = [f"{path.relative_to(ARENA)}:{getattr(node, 'lineno', 0)}" for path in formatting
                      if path in SOURCES
                      for node in ast.walk(_tree(path)) if _legacy_amount_written(node)]
    spans = [f"{path.relative_to(ARENA)}:{getattr(node, 'lineno', 0)}" for path in SOURCES
             if path.name != "picks.py" and "randint" in path.read_text(encoding="utf-8")
             for node in ast.walk(_tree(path)) if _day_of_span_written(node)]
    rounded = [f"{path.relative_to(ARENA)}:{getattr(node, 'lineno', 0)}" for path in SOURCES
               if path.name != "formats.py" and "1e-9" in path.read_text(encoding="utf-8")
               for node in ast.walk(_tree(path)) if _cents_written(node)]
    picked_inline = [f"{path.relative_to(ARENA)}:{getattr(node, 'lineno', 0)}" for path in SOURCES
                     if path.name != "picks.py" and ".sample(" in path.read_text(encoding="utf-8")
                     for node in ast.walk(_tree(path)) if _is_inline_pick(node)]
    assert not spelled_out, f"amount spellings listed outside arena/core/values.py: {spelled_out}"
    assert not legacy_amounts, f"a legacy amount written out (the kit's legacy_amount writes it): {legacy_amounts}"
    assert not spans, f"a day of a span drawn by hand (the kit's day_between draws it): {spans}"
    assert not rounded, f"an amount rounded to cents by hand (the kit's cents rounds it): {rounded}"
    assert not picked_inline, f"the kit's pick written out: {picked_inline}"


def _task_modules() -> list[Path]:
    """The modules of the built-in gyms and the starter that build tasks (``tasks*.py``)."""
    return [p for p in SOURCES if p.name.startswith("tasks") and ("gyms" in p.parts or "starter" in p.parts)]


def _string_text(node: ast.AST) -> str | None:
    """The text of a string literal (an f-string's literal parts, its fields as ``{}``), or ``None``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def _not_found_raised(node: ast.AST) -> TypeGuard[ast.Raise]:
    """``raise NotFound(f"... not found")``: the kit's ``fetch`` refusal written out."""
    if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name)
            and node.exc.func.id == "NotFound" and node.exc.args):
        return False
    text = _string_text(node.exc.args[0])
    return text is not None and text.rstrip(". ").endswith("not found")


def test_tools_fetch_records_through_the_kit() -> None:
    gyms = [path for path in SOURCES if "gyms" in path.parts or "starter" in path.parts]
    written_out = [f"{path.relative_to(ARENA)}:{node.lineno}" for path in gyms
                   if "NotFound" in path.read_text(encoding="utf-8")
                   for node in ast.walk(_tree(path)) if _not_found_raised(node)]
    assert not written_out, f"a gym raises the kit's not-found refusal itself (the kit's fetch does): {written_out}"


def test_templates_order_rows_and_ask_the_search_index_through_the_kit() -> None:
    shuffling = [f"{path.relative_to(ARENA)}:{node.lineno}" for path in _task_modules()
                 for node in ast.walk(_tree(path)) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Attribute) and node.func.attr == "shuffle"]
    matching = re.compile(r"\bLIKE\b|\binstr\s*\(|\bMATCH\b|\bGLOB\b", re.IGNORECASE)
    own_search = [f"{path.relative_to(ARENA)}:{getattr(node, 'lineno', 0)}" for path in _task_modules()
                  for node in ast.walk(_tree(path)) if (text := _string_text(node)) is not None
                  and "search_index" in text and matching.search(text)]
    assert not shuffling, f"a template shuffles rows itself (the kit's shuffled orders them): {shuffling}"
    assert not own_search, f"a template matches search_index rows itself (the kit's finds_only asks): {own_search}"
