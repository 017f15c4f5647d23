"""``gymloop gyms``: list the built-in gyms, check their conformance, show a pack."""

from __future__ import annotations

import os
import sqlite3
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from arena.core.domains import available_domains, get_domain, loadable_domains
from flows import cli_gyms_serve
from flows.cli_group import GymloopGroup
from flows.cli_output import CliError, make_console, print_line, print_table

if TYPE_CHECKING:
    from arena.core.pack import Pack

app = typer.Typer(cls=GymloopGroup, help="Gyms: list them, check them, show a pack, start a new one.",
                  no_args_is_help=True)
console = make_console()


def _load(target: str) -> Pack:
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.core.pack import build_pack, read_pack

    path = Path(target)
    gyms = available_domains()
    if path.is_dir() and ((path / "manifest.json").is_file() or target not in gyms):  # a gym's package is no pack
        return read_pack(path)
    if target in gyms:
        return build_pack(target, seed=0)
    raise typer.BadParameter(
        f"{target!r} is neither a pack folder nor an installed gym ({', '.join(available_domains())})"
    )


def _table_counts(pack: Pack) -> list[tuple[str, int]]:
    db = sqlite3.connect(":memory:")
    db.deserialize(pack.state_db)
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    counts = [(n, int(db.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0])) for n in names]
    db.close()
    return counts


@app.command("list")
def list_gyms() -> None:
    """List the gyms (built-in and your own) with their tools, tables and tasks; name those that cannot load."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.core.pack import build_pack

    names, problems = loadable_domains()
    rows = []
    for name in names:
        try:
            pack = build_pack(name, seed=0)
        except ValueError as exc:  # the gym loads but cannot generate: name it beside the others
            problems.append(f"gym {name!r} cannot generate its seed-0 pack: {exc}")
            continue
        counts = _table_counts(pack)
        splits = Counter(t.split for t in pack.tasks)
        rows.append([name, get_domain(name).description, str(len(pack.tools)), str(len(counts)),
                     str(sum(c for _, c in counts)), str(splits["train"]), str(splits["heldout"])])
    print_table(console, "Gyms", ("domain", "description", "tools", "tables", "entities", "train", "heldout"),
                rows, right=("tools", "tables", "entities", "train", "heldout"))
    for problem in problems:
        print_line(console, f"cannot load: {problem}")
    if problems:
        raise CliError(f"{len(problems)} gym(s) cannot load (named above); the others are listed", exit_code=1)


@app.command("check")
def check(
    domains: Annotated[
        list[str] | None, typer.Argument(metavar="[GYM_OR_PACK]...",
                                         help="Gyms (built-in or your own) or pack folders; default: every gym.")
    ] = None,
) -> None:
    """Check gyms: what a round needs of every task and tool. A gym that passes is one a round can train on.

    Per task: the gold program passes, a null agent and the adversarial agents fail, replays are identical, bad
    calls change nothing, the careful reference policy passes it from its intent alone, finds its records by fields
    their searches show and makes no policy-required step the gold program skips. Per tool: every parameter typed
    and documented. Then the served-verdict oracle, and the weakness kinds the factory can target in each gym.
    """
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.checks.conformance import check_pack
    from arena.core.pack import PackError
    from arena.serve.oracle import audit_served

    problems: list[str] = []
    if domains:
        targets = list(domains)
    else:
        targets, problems = loadable_domains()
    failed = len(problems)
    for problem in problems:
        print_line(console, f"FAIL cannot load: {problem}")
    summary: list[list[str]] = []
    kinds: list[list[str]] = []
    for target in targets:
        try:
            pack = _load(target)
        except PackError as exc:
            raise CliError(str(exc), prefix="refused") from exc
        except ValueError as exc:  # the gym loads but refuses to generate: its own words name the template
            if len(targets) == 1:
                raise CliError(f"gym {target!r} cannot generate its tasks: {exc}", prefix="refused") from None
            print_line(console, f"FAIL {target} generate: {exc}")
            failed += 1
            continue
        with console.status(f"checking {pack.manifest.domain} ({len(pack.tasks)} tasks)"):
            report = check_pack(pack)
            leaked = audit_served(pack)
        waived = _waived(pack, report.waived, leaked)
        leaked = [t for t in leaked if not any(t in ids for ids in waived.get("served_oracle", {}).values())]
        summary.append([pack.id, report.domain, str(report.tasks), str(len(report.results) + report.tasks),
                        str(len(report.failures) + len(leaked))])
        for failure in report.failures[:50]:
            where = f"{report.domain}/{failure.task_id}" if failure.task_id else report.domain
            print_line(console, f"FAIL {where} {failure.check}: {failure.detail}")
        if len(report.failures) > 50:
            print_line(console, f"... and {len(report.failures) - 50} more failures in {report.domain}")
        for task_id in leaked:
            print_line(console, f"FAIL {report.domain}/{task_id} served_oracle: a client passed it by replaying what "
                                "served verdicts said")
        for check_name, reasons in waived.items():
            for reason, task_ids in reasons.items():
                print_line(console, f"N/A {report.domain} {check_name} on {len(task_ids)} task(s) "
                                    f"({', '.join(task_ids[:8])}{', ...' if len(task_ids) > 8 else ''}): {reason}")
        failed += len(report.failures) + len(leaked)
        kinds.append(_kinds_row(pack))
    print_table(console, "Conformance", ("pack", "domain", "tasks", "checks", "failures"), summary,
                right=("tasks", "checks", "failures"))
    print_table(console, "Weakness kinds the factory can target", ("domain", "targetable", "not targetable (why)"),
                kinds)
    if failed:
        raise CliError(f"{failed} checks failed", exit_code=1)
    console.print(Text("every check passed: a round can train on it", style="green"))


def _waived(pack: Pack, results: list[Any], leaked: list[str]) -> dict[str, dict[str, list[str]]]:
    """The checks the gym's verdict cannot hold (its tasks by check and reason), the served oracle's included."""
    out: dict[str, dict[str, list[str]]] = {}
    for result in results:
        out.setdefault(result.check, {}).setdefault(result.waived, []).append(result.task_id)
    try:
        why = get_domain(pack.manifest.domain).not_applicable
    except KeyError:
        return out
    for task_id in leaked:
        reason = why(pack.task(task_id), "served_oracle") if why is not None else None
        if reason is not None:
            out.setdefault("served_oracle", {}).setdefault(reason, []).append(task_id)
    return out


def _kinds_row(pack: Pack) -> list[str]:
    """The pack's gym's row: the weakness kinds its variants can aim at, and why not the others."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.authoring.knobs import targetable_kinds

    try:
        domain = get_domain(pack.manifest.domain)
    except KeyError:
        return [pack.manifest.domain, "-", "no gym of that name is installed"]
    kinds = targetable_kinds(domain, {tag for t in pack.tasks for tag in t.tags})
    return [domain.name, ", ".join(k for k, why in kinds.items() if why is None) or "-",
            "; ".join(f"{k}: {why}" for k, why in kinds.items() if why is not None) or "-"]


@app.command("new")
def new(name: Annotated[str, typer.Argument(help="The gym's name, also its Python package's.")]) -> None:
    """Write a starter gym to edit (the rental desk of docs/writing-a-gym.md) and name it in gymloop.toml."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.authoring.new_gym import register_in_settings, write_starter

    settings_file = Path(os.environ.get("GYMLOOP_CONFIG", "gymloop.toml")).resolve()
    try:
        written = write_starter(name, settings_file.parent)
        done = register_in_settings(name, settings_file)
    except ValueError as exc:
        raise CliError(str(exc), prefix="refused") from None
    for path in written:
        print_line(console, f"wrote {path}")
    print_line(console, done)
    print_line(console, f"{name}/ is the rental desk under your gym's name: its description ({name}/__init__.py), "
                        "world (world.py), tools (tools.py), policy (policy.md) and templates (tasks.py) are the "
                        "rental desk's, yours to replace")
    print_line(console, f"next: gymloop gyms check {name}   (then edit {name}/ as docs/writing-a-gym.md explains)")


@app.command("show")
def show(pack_ref: Annotated[str, typer.Argument(metavar="PACK", help="A pack folder or a gym.")]) -> None:
    """Show a pack: tables, tools, task counts by split and category, faults, and the gym's knobs."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.core.pack import PackError

    try:
        pack = _load(pack_ref)
    except PackError as exc:
        raise CliError(str(exc), prefix="refused") from exc
    m = pack.manifest
    print_line(console, f"{m.domain} pack {m.id}  seed={m.seed} parent={m.parent or '-'} knobs={m.knobs}")
    print_table(console, "Tables", ("table", "rows"), [[name, str(count)] for name, count in _table_counts(pack)],
                right=("rows",))
    print_table(console, "Tools", ("tool", "mode", "operation", "permission", "irreversible"),
                [[s.name, s.mode, s.operation, s.permission or "", "yes" if s.irreversible else ""]
                 for s in pack.tools])
    by = Counter((t.category, t.split) for t in pack.tasks)
    print_table(console, "Tasks by category and split", ("category", "train", "heldout"),
                [[c, str(by[(c, "train")]), str(by[(c, "heldout")])] for c in sorted({t.category for t in pack.tasks})],
                right=("train", "heldout"))
    print_table(console, "Faults", ("fault", "kind", "tool", "on call", "times"),
                [[f.id, f.kind, f.tool, str(f.on_call), str(f.times)] for f in pack.faults],
                right=("on call", "times"))
    knobs = _knob_rows(m.domain)
    if knobs:
        print_table(console, f"Knobs (build_pack({m.domain!r}, knobs={{...}}), the factory's variants)",
                    ("knob", "honoured", "what it does, or why not"), knobs)


def _knob_rows(name: str) -> list[list[str]]:
    """The gym's knobs with their documentation, then the vocabulary knobs it cannot honour with the reason."""
    try:
        domain = get_domain(name)
    except KeyError:
        return []
    return ([[knob, "yes", doc] for knob, doc in domain.knobs.items()]
            + [[knob, "no", why] for knob, why in sorted(domain.cannot.items())])


app.command("serve")(cli_gyms_serve.serve)
app.command("image")(cli_gyms_serve.image)
