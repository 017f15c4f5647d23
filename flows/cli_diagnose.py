"""``gymloop diagnose``: rank a round's weaknesses from an episodes JSONL file or a registry round."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from flows.cli_output import make_console, print_json, print_table

if TYPE_CHECKING:
    from arena.core.episode import EpisodeRecord
    from arena.core.pack import Pack
    from diagnosis import DiagnosisContext, WeaknessReport
    from flows.diagnose_packs import PackLookup

logger = logging.getLogger(__name__)


def _round_episodes(round_id: int, stage: str) -> tuple[list[EpisodeRecord], DiagnosisContext]:
    """A registry round's episodes of one stage, with the tools, graphs and tasks of their packs."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.registry_access import open_registry
    from flows.settings import cli_settings
    from flows.weaknesses import diagnosis_context
    from registry import RegistryError

    registry = open_registry(cli_settings())
    try:
        registry.round(round_id)
        records = registry.round_episodes(round_id, stage=stage)
    except RegistryError as exc:
        raise typer.BadParameter(str(exc), param_hint="--round") from exc
    packs = [registry.load_pack(pid) for pid in sorted({r.pack_id for r in records})]
    return records, diagnosis_context(packs)


def print_report(console: Console, report: WeaknessReport) -> None:
    """The two ranked tables (kinds, then grains) and what their columns mean."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from diagnosis.tables import GRAIN_COLUMNS, KIND_COLUMNS, column_notes, grain_rows, kind_rows

    model = f" of {report.model_ref}" if report.model_ref else ""
    print_table(console, f"Weakness kinds{model}: {report.failures} failed episodes of {report.episodes}, "
                         "ranked by the failures each kind explains", KIND_COLUMNS, kind_rows(report),
                right=("rank", "failures", "share (95% CI)", "per episode", "grains", "also secondary in"))
    print_table(console, "Weaknesses by grain (gym: tool), kind by kind, ranked by impact within a kind",
                GRAIN_COLUMNS, grain_rows(report),
                right=("rank", "failures", "share (95% CI)", "per episode", "reward lost", "learnability",
                       "trend", "impact", "also secondary in"))
    if report.secondary_counts:
        # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
        from diagnosis.tables import secondary_line

        console.print(Text(secondary_line(report)), soft_wrap=True)
    console.print("Columns:")
    seen: set[str] = set()
    for column, note in column_notes(KIND_COLUMNS) + column_notes(GRAIN_COLUMNS):
        if column not in seen:
            seen.add(column)
            console.print(Text(f"  {column}: {note}"), soft_wrap=True)


def _sources(found: dict[str, str]) -> str:
    """Where the packs were found, counted by place (``2 in the registry, 1 rebuilt from gym helpdesk``)."""
    places = Counter(f"rebuilt from gym {s.split()[1]}" if s.startswith("gym ") else
                     "in the --packs folder" if s == "--packs" else f"in the {s}" for s in found.values())
    return ", ".join(f"{n} {place}" for place, n in sorted(places.items(), key=lambda item: (-item[1], item[0])))


def _registry_lookup() -> PackLookup:
    """Looks a pack up in the settings' registry (opened on first use); ``None`` for a pack it does not hold."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from arena.core.pack import PackError
    from flows.registry_access import open_registry
    from flows.settings import cli_settings
    from registry import RegistryError

    def lookup(pack_id: str) -> Pack | None:
        try:
            return open_registry(cli_settings()).load_pack(pack_id)
        except RegistryError:
            return None
        except PackError as exc:
            logger.warning("pack %s in the registry is unusable: %s", pack_id[:12], exc)
            return None

    return lookup


def _episode_context(episodes: Path, packs_dir: Path | None, console: Console) -> DiagnosisContext:
    """The diagnosis context of the packs the episodes came from; warns loudly about the ones not found."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from diagnosis import iter_episodes_jsonl
    from flows.diagnose_packs import EpisodePacks, find_packs

    wanted = EpisodePacks.of(iter_episodes_jsonl(episodes))
    try:
        found = find_packs(wanted, packs_dir=packs_dir, registry=_registry_lookup())
    except FileNotFoundError as exc:
        raise typer.BadParameter(str(exc), param_hint="--packs") from exc
    gyms = ", ".join(sorted(set(wanted.domains.values()))) or "no gym"
    console.print(Text(f"Diagnosing {sum(wanted.episodes.values())} episodes of {gyms} from {episodes}: played in "
                       f"{len(wanted.domains)} gym world(s) (packs); tasks, tools and dependency graphs found for "
                       f"{len(found.sources)}" + (f" ({_sources(found.sources)})." if found.sources else ".")),
                  soft_wrap=True)
    for pack_id, source in sorted(found.sources.items()):
        if pack_id in found.variants:
            console.print(Text(f"  pack {pack_id[:12]}: {source}"), soft_wrap=True)
    if found.missing:
        lost = sum(found.missing.values())
        console.print(
            f"[bold red]WARNING:[/] {lost} of {sum(wanted.episodes.values())} episodes come from "
            f"{len(found.missing)} pack(s) not found ({', '.join(p[:12] for p in sorted(found.missing))}): they are "
            "diagnosed without their tasks, tools and dependency graph, so wrong_id, missed_policy_dependency and "
            "claimed_unverified_success lose most of their recall. Pass --packs FOLDER, or point GYMLOOP_HOME at "
            "the home whose registry holds them.")
    return found.context()


def diagnose_command(
    episodes: Annotated[Path | None, typer.Option("--episodes", help="Episodes JSONL file to diagnose.")] = None,
    round_id: Annotated[int | None, typer.Option("--round", help="Round id in the registry to diagnose.")] = None,
    stage: Annotated[str, typer.Option(help="Stage of the round's episodes (eval_before, train, eval_after).")] = (
        "eval_before"),
    out: Annotated[Path, typer.Option("--out", help="Where to write the report as JSON.")] = Path("weaknesses.json"),
    markdown: Annotated[bool, typer.Option("--markdown", help="Also write Markdown beside --out.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the clustering and the bootstrap.")] = 0,
    packs: Annotated[Path | None, typer.Option("--packs", help="Folder of the packs the episodes came from.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout.")] = False,
) -> None:
    """Diagnose failed episodes into ranked weaknesses; print them and write the report."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from diagnosis import diagnose, iter_episodes_jsonl, render_markdown

    console = Console(highlight=False)
    if (episodes is None) == (round_id is None):
        raise typer.BadParameter("give exactly one of --episodes FILE or --round ID")
    skipped: Counter[str] = Counter()
    if episodes is not None:
        if episodes.is_dir():
            raise typer.BadParameter(f"{episodes} is a folder, not an episodes JSONL file", param_hint="--episodes")
        if not episodes.is_file():
            raise typer.BadParameter(f"episodes file {episodes} does not exist", param_hint="--episodes")
        try:
            ctx = _episode_context(episodes, packs, make_console(stderr=True) if as_json else console)
            report = diagnose(iter_episodes_jsonl(episodes, skipped), ctx, seed=seed)
        except UnicodeDecodeError as exc:
            raise typer.BadParameter(f"{episodes} is not UTF-8 text (byte {exc.start}): not an episodes JSONL file",
                                     param_hint="--episodes") from None
        except RecursionError:
            raise typer.BadParameter(f"{episodes} holds JSON nested too deep to be an episode record",
                                     param_hint="--episodes") from None
    else:
        records, ctx = _round_episodes(int(str(round_id)), stage)
        report = diagnose(records, ctx, seed=seed, round_id=str(round_id))
    for reason, count in skipped.items():
        report.skipped[reason] = report.skipped.get(reason, 0) + count
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report.to_json(), encoding="utf-8")
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    print_report(console, report)
    if report.skipped:
        console.print("[yellow]skipped:[/] " + ", ".join(f"{n} {r}" for r, n in sorted(report.skipped.items())))
    console.print(f"report written to {out}")
    if markdown:
        md = out.with_suffix(".md")
        md.write_text(render_markdown(report), encoding="utf-8")
        console.print(f"markdown written to {md}")
