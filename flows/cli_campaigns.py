"""``gymloop campaigns | compare | episode``: list campaigns, compare campaigns or rounds, show one episode."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import BaseModel
from rich.text import Text

from arena.core.episode import EpisodeRecord
from arena.core.model_id import ModelIdError, names_model, parse_model_id
from arena.core.text import clip
from flows.cli_output import CliError, make_console, print_json, print_line, print_table
from flows.cli_run import _settings
from flows.models import TransferResult

if TYPE_CHECKING:
    from flows.models import ArmComparison, RoundSummary
    from flows.settings import GymloopSettings
    from registry import Registry

console = make_console()

HomeOption = Annotated[Path | None, typer.Option(help="gymloop home holding the campaigns.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]


def _open(home: Path | None) -> tuple[GymloopSettings, Registry]:
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.registry_access import open_registry

    settings = _settings(**({"home": str(home)} if home else {}))
    return settings, open_registry(settings)


def _summaries(registry: Registry, campaign: str, arm: str = "targeted") -> list[RoundSummary]:
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.report import campaign_summaries

    try:
        return campaign_summaries(registry, campaign, arm)
    except ValueError:
        return []


def campaigns_command(home: HomeOption = None, as_json: JsonOption = False) -> None:
    """List the campaigns, each arm on its row: rounds finished, held-out pass rate first -> now, the arm's model.

    The arm's model is its last promoted round's (``flows.promotion``; the model it started from while no round was
    promoted), and the pass rate ends at that model's. With transfer suites, each suite's lift over the arm's rounds,
    with its paired interval, stands beside.
    """
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.transfer import campaign_results
    from flows.transfer_view import transfer_cell

    settings, registry = _open(home)
    rows: list[dict[str, Any]] = []
    for info in registry.campaigns():
        for arm in registry.arms(info.id):
            rounds = registry.rounds(info.id, arm=arm.name)
            summaries = _summaries(registry, info.name, arm.name)
            first, last = (summaries[0], summaries[-1]) if summaries else (None, None)
            kept = next((s for s in reversed(summaries) if s.promotion.promoted), None)
            rows.append({
                "campaign": info.name, "arm": arm.name,
                "rounds_finished": sum(1 for r in rounds if r.status == "finished"),
                "rounds": len(rounds), "last_round": last.round_index if last else None,
                "promoted_round": kept.round_index if kept else None,
                "before": first.before if first else None,
                "after": kept.after if kept else first.before if first else None,
                "model_out": kept.model_out if kept else first.model_in if first else None,
                "created_at": str(info.created_at)[:19],
                "transfer": [r.model_dump(mode="json") for r in
                             campaign_results(registry, summaries, settings.curriculum.seed)],
            })
    if as_json:
        print_json(rows)
        return
    if not rows:
        print_line(console, f"no campaign in {registry.display_url}")
        return
    columns = ["campaign", "arm", "rounds", "held-out pass rate", "change", "promoted model", "created (UTC)"]
    cells = [[r["campaign"], r["arm"], f"{r['rounds_finished']}/{r['rounds']}",
              "" if r["before"] is None else f"{r['before']:.3f} -> {r['after']:.3f}",
              "" if r["before"] is None else f"{r['after'] - r['before']:+.3f}", r["model_out"] or "",
              r["created_at"]] for r in rows]
    if any(r["transfer"] for r in rows):
        columns.insert(5, "transfer lift")
        for row, r in zip(cells, rows, strict=True):
            row.insert(5, transfer_cell([TransferResult.model_validate(t) for t in r["transfer"]]))
    print_table(console, f"campaigns in {registry.display_url}", columns, cells)


def _side(settings: GymloopSettings, registry: Registry, target: str) -> dict[str, Any]:
    """One side of a comparison: ``campaign[/arm]`` (all its rounds) or ``campaign[/arm]:round``."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.outcomes import campaign_flips, campaign_lift
    from flows.promotion import promotion_line
    from flows.report import best_summary, round_report
    from flows.transfer import campaign_results

    where, _, index = target.partition(":")
    name, _, arm = where.partition("/")
    arm = arm or "targeted"
    summaries = _summaries(registry, name, arm)
    if not summaries:
        raise CliError(f"campaign {name!r} ({arm} arm) has no finished round in {registry.display_url} "
                    "(list them: gymloop campaigns)")
    if index:
        chosen = [s for s in summaries if str(s.round_index) == index]
        if not chosen:
            raise CliError(f"campaign {name!r} has no finished round {index}; finished: "
                        f"{', '.join(str(s.round_index) for s in summaries)}")
        first = last = chosen[0]
        lift = {"lift": first.lift, "lift_low": first.lift_low, "lift_high": first.lift_high}
        rounds = f"round {first.round_index}"
        flips = first.flips.model_dump(mode="json") if first.flips is not None else None
        promotion = promotion_line(first.promotion)
        model_out, after = first.model_out, first.after
    else:
        last = summaries[-1]
        first = next(s for s in summaries if s.baseline == last.baseline)  # the campaign's lift starts there
        _, after, value, low, high = campaign_lift(registry, name, settings.curriculum.seed, arm)
        lift = {"lift": value, "lift_low": low, "lift_high": high}
        rounds = (f"round {first.round_index}" if first is last
                  else f"rounds {first.round_index} to {last.round_index}")
        flips = campaign_flips(registry, name, arm).model_dump(mode="json")
        kept = best_summary([s for s in summaries if s.baseline == last.baseline], last=True)
        promotion = f"last promoted: round {kept.round_index}" if kept is not None else "no round promoted"
        model_out = kept.model_out if kept is not None else first.model_in
    suites = first.transfer if index else campaign_results(registry, summaries, settings.curriculum.seed)
    report = round_report(registry, last.round_id)
    kinds = report.kinds if report is not None else []
    baseline = next((b for b in registry.baselines(name) if b.number == last.baseline), None)
    return {"target": target, "campaign": name, "arm": arm, "round": int(index) if index else None,
            "rounds": rounds, "baseline": last.baseline, "baseline_from_round": baseline.first_round if baseline else 0,
            "baseline_change": baseline.change if baseline else None,
            "model_in": first.model_in, "model_out": model_out, "before": first.before,
            "after": after, **lift, "flips": flips, "promotion": promotion,
            "transfer": {r.suite: r.model_dump(mode="json") for r in suites},
            "weakness_share": {k.kind: k.share for k in kinds},
            "weakness_count": {k.kind: k.count for k in kinds}, "weakness_rate": {k.kind: k.rate for k in kinds}}


def _targeting(settings: GymloopSettings, a: dict[str, Any], b: dict[str, Any]) -> ArmComparison | None:
    """The targeting lift when the sides are the targeted arm and a control of one campaign (same rounds)."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.control import campaign_comparison, compare_round
    from flows.registry_access import open_registry as registry_of

    arms = {a["arm"], b["arm"]}
    if a["campaign"] != b["campaign"] or "targeted" not in arms or len(arms) != 2 or a["round"] != b["round"]:
        return None
    control = (arms - {"targeted"}).pop()
    try:
        if a["round"] is None:
            return campaign_comparison(settings, a["campaign"], control)
        return compare_round(settings, registry_of(settings), a["campaign"], control, a["round"])
    except ValueError as exc:
        raise CliError(str(exc)) from exc


def compare_command(
    first: Annotated[str, typer.Argument(help="A campaign (CAMPAIGN/ARM for a control arm), or CAMPAIGN:ROUND.")],
    second: Annotated[str, typer.Argument(help="A campaign (CAMPAIGN/ARM for a control arm), or CAMPAIGN:ROUND.")],
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Compare two campaigns, arms or rounds: pass rates, lift with its interval, flips, last round's weaknesses.

    The targeted arm against a control of the same campaign (``compare C C/uniform``) also gives the targeting
    lift, targeted minus control with its paired interval, as ``gymloop report`` and MLflow state it.
    """
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.control import targeting_line, targeting_verdict

    settings, registry = _open(home)
    a, b = _side(settings, registry, first), _side(settings, registry, second)
    targeting = _targeting(settings, a, b)
    if as_json:
        extra = {} if targeting is None else {"targeting": {**targeting.model_dump(mode="json"),
                                                            "verdict": targeting_verdict(targeting)}}
        print_json({"a": a, "b": b, **extra})
        return
    # The difference column: targeted minus control for two arms of a campaign (whichever order they are given
    # in), else the second side minus the first.
    sign = -1 if targeting is not None and a["arm"] == "targeted" else 1
    minus = f"targeted - {targeting.control}" if targeting is not None else "B - A"

    def diff(key: str) -> str:
        return f"{sign * (b[key] - a[key]):+.3f}"

    def num(key: str) -> list[str]:
        shown = "{:+.3f}" if "lift" in key else "{:.3f}"
        return [key.replace("_", " "), shown.format(a[key]), shown.format(b[key]), diff(key)]

    rows = [["rounds", a["rounds"], b["rounds"], ""], ["baseline", _baseline_cell(a), _baseline_cell(b), ""],
            ["model in", a["model_in"], b["model_in"], ""],
            ["model out", a["model_out"], b["model_out"], ""], num("before"), num("after"), num("lift"),
            ["95% interval", f"[{a['lift_low']:+.3f}, {a['lift_high']:+.3f}]",
             f"[{b['lift_low']:+.3f}, {b['lift_high']:+.3f}]", ""]]
    rows += [[name, *(_flip_cell(side, key) for side in (a, b)), ""]
             for name, key in (("pass->fail", "pass_to_fail"), ("fail->pass", "fail_to_pass"))]
    rows.append(["promoted", a["promotion"], b["promotion"], ""])
    if targeting is not None:
        rows += [["targeting lift", "", "", f"{targeting.lift:+.3f}"],
                 ["95% paired interval", "", "", f"[{targeting.low:+.3f}, {targeting.high:+.3f}]"]]
    rows += _transfer_rows(a, b, sign)
    kinds = sorted(set(a["weakness_rate"]) | set(b["weakness_rate"]),
                   key=lambda k: (-max(a["weakness_rate"].get(k, 0.0), b["weakness_rate"].get(k, 0.0)), k))

    def kind_cell(side: dict[str, Any], kind: str) -> str:
        return (f"{side['weakness_count'].get(kind, 0)} ({side['weakness_share'].get(kind, 0.0):.1%} of failures, "
                f"{side['weakness_rate'].get(kind, 0.0):.3f} per episode)")

    for kind in kinds:
        ra, rb = a["weakness_rate"].get(kind, 0.0), b["weakness_rate"].get(kind, 0.0)
        rows.append([kind, kind_cell(a, kind), kind_cell(b, kind), f"{sign * (rb - ra):+.3f} per episode"])
    print_table(console, f"{first} vs {second} (weakness kinds in the last round of each side: failed held-out "
                         "episodes showing the kind, all its grains together; its share of the failures; its failures "
                         "per held-out episode)", ("measure", first, second, minus), rows)
    if targeting is not None:
        print_line(console, targeting_line(targeting))
    for line in _baseline_lines(a, b):
        print_line(console, line)


def _flip_cell(side: dict[str, Any], key: str) -> str:
    """Held-out tasks a side flipped one way, of the tasks its lift pairs (``-`` for a round recorded without)."""
    flips = side["flips"]
    return "-" if flips is None else f"{flips[key]} of {flips['tasks']} tasks"


def _baseline_cell(side: dict[str, Any]) -> str:
    """A side's baseline: its number, and the round it starts from after a change."""
    return str(side["baseline"]) + (f" (from round {side['baseline_from_round']})" if side["baseline"] else "")


def _baseline_lines(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Where each side's baseline starts and why (after an accepted change), and whether the sides' differ."""
    lines = [f"{side['target']}: baseline {side['baseline']} starts at round {side['baseline_from_round']} of "
             f"campaign {side['campaign']} (accepted: {side['baseline_change']})"
             for side in (a, b) if side["baseline_change"]]
    if a["campaign"] == b["campaign"] and a["baseline"] != b["baseline"]:
        lines.append(f"{a['target']} and {b['target']} are measured against different baselines: their pass rates "
                     "and lifts are not paired")
    return list(dict.fromkeys(lines))


def _transfer_rows(a: dict[str, Any], b: dict[str, Any], sign: int) -> list[list[str]]:
    """Each transfer suite's pass rates and lift with its paired interval on both sides, and the lifts' difference."""
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.transfer_view import interval

    rows = []
    for suite in sorted(set(a["transfer"]) | set(b["transfer"])):
        ra, rb = (TransferResult.model_validate(side["transfer"][suite]) if suite in side["transfer"] else None
                  for side in (a, b))
        rows += [[f"transfer {suite}", *(f"{r.before:.3f} -> {r.after:.3f}" if r else "" for r in (ra, rb)), ""],
                 [f"transfer {suite} lift", *(interval(r) if r else "" for r in (ra, rb)),
                  f"{sign * (rb.lift - ra.lift):+.3f}" if ra and rb else ""]]
    return rows


STAGE_NAMES = {"eval_before": "held-out eval", "train": "training rollouts", "eval_after": "re-eval",
               "transfer_before": "transfer eval", "transfer_after": "transfer re-eval"}
"""How the episode view names a round's stages (the names the round's Prefect tasks carry)."""

OUTPUT_CHARS = 300
"""Characters of a tool's output shown per trace step (the cut says how much was left; ``--json`` has all)."""


class _Play(BaseModel):
    """One episode as one model played it in one arm, with every round and stage that holds it."""

    campaign: str
    arm: str
    model: str
    stored_in: list[dict[str, Any]]
    episode: EpisodeRecord


def _plays(registry: Registry, found: list[tuple[int, str, EpisodeRecord]]) -> list[_Play]:
    """Group stored copies of an episode by campaign and model: a re-eval copied into the next round is one play."""
    campaigns = {c.id: c for c in registry.campaigns()}
    arms = {a.id: a.name for c in campaigns for a in registry.arms(c)}
    plays: dict[tuple[str, str, str], _Play] = {}
    for round_id, stage, record in found:
        info = registry.round(round_id)
        campaign, arm = campaigns[info.campaign_id], arms[info.arm_id]
        key = (campaign.name, arm, record.model_ref)
        place = {"round": info.index, "stage": stage, "round_id": round_id}
        if key in plays:
            plays[key].stored_in.append(place)
            continue
        plays[key] = _Play(campaign=campaign.name, arm=arm, model=record.model_ref, stored_in=[place],
                           episode=record)
    order = {stage: n for n, stage in enumerate(STAGE_NAMES)}
    return sorted(plays.values(), key=lambda p: (p.arm != "targeted", p.campaign, min(
        (w["round"], order.get(w["stage"], len(order))) for w in p.stored_in)))


def _printed(model: str, settings: GymloopSettings) -> str:
    """How episodes name ``model``: a built-in policy by its parameters' name, any other name as given.

    Raises:
        CliError: A name that is no model (an unknown failure mode, a masked endpoint without api_base).
    """
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from flows.model_client import builtin

    try:
        spec = parse_model_id(model, api_base=settings.models.api_base)
        return builtin(spec).ref if spec.form == "builtin" else model
    except ModelIdError as exc:
        raise CliError(str(exc), prefix="bad option --model") from None


PLAY_IDENTITY = frozenset({"model_ref", "tokens_in", "tokens_out", "cost", "latency_s", "wall_time_s", "decisions"})
"""Fields that differ between plays without changing what the episode did: the model, its usage and timings, and
the reference policy's internal draws (read by its trainer only)."""


def behaviours(plays: list[_Play]) -> list[list[_Play]]:
    """Plays grouped by what the episode did (calls, results, reply, verdict): identical plays are shown once."""
    groups: dict[str, list[_Play]] = {}
    for play in plays:
        seen = play.episode.model_dump(mode="json", exclude=set(PLAY_IDENTITY))
        groups.setdefault(json.dumps(seen, sort_keys=True, default=str), []).append(play)
    return list(groups.values())


def _where_label(play: _Play) -> str:
    return ", ".join(f"round {w['round']} {STAGE_NAMES.get(w['stage'], w['stage'])}" for w in play.stored_in)


CUT_MARK = re.compile(r"… \[[\d,]+ more characters\]")
"""How ``arena.core.text.clip`` marks a cut: kept whole on the line of the text it ends."""

_KEEP = "\x1f"
"""Stands for a space that wrapping must not break at (a character no printed text holds)."""


def _say(text: str, indent: int = 0, style: str = "") -> None:
    """Print ``text`` wrapped at spaces to the terminal's width, indented.

    A word is never cut (one longer than a line stands alone on its line), nor is a cut's mark.
    """
    pad = " " * indent
    text = CUT_MARK.sub(lambda mark: mark.group().replace(" ", _KEEP), text.replace(_KEEP, " "))
    for paragraph in text.split("\n"):
        for line in textwrap.wrap(paragraph, max(console.width, 20), initial_indent=pad, subsequent_indent=pad + "  ",
                                  break_long_words=False, break_on_hyphens=False) or [""]:
            console.print(Text(line.replace(_KEEP, " "), style=style), soft_wrap=True)


def _print_behaviour(group: list[_Play], number: int, total: int) -> None:
    """One behaviour: the plays that showed it (campaign, arm, model, where stored), then the episode once."""
    record = group[0].episode
    plays = "1 play" if len(group) == 1 else f"{len(group)} identical plays"
    _say(f"behaviour {number} of {total}: {'PASSED' if record.passed else 'FAILED'} (score {record.score:.2f})"
         f"{', invalid' if record.invalid else ''}; {plays}", style="bold")
    for play in group:
        _say(f"{play.campaign} ({play.arm} arm), model {play.model}: {_where_label(play)}", indent=2)
    _say(f"task {record.domain}/{record.task_id} ({record.split}, {record.category}), pack {record.pack_id}, "
         f"seed {record.seed}, attempt {record.attempt}, agent {record.agent}")
    if record.failure:
        _say(f"failure ({record.failure.boundary}, {record.failure.kind}): {record.failure.message}")
    if record.user is not None:
        user = record.user
        _say(f"user played by {user.ref}; conversation ended: {user.ended}"
             + (f" ({user.requests} requests, {user.tokens_in + user.tokens_out} tokens)" if user.requests else ""))
    _say("trace" if not record.conversation else "conversation and trace", style="bold")
    for step in record.trace:
        for turn in (t for t in record.conversation if t.step == step.index):
            _say(f"{turn.role}: {clip(turn.text, OUTPUT_CHARS)}", indent=2)
        outcome = (clip(json.dumps(step.output, default=str), OUTPUT_CHARS) if step.ok
                   else f"ERROR {step.error.kind}: {step.error.message}" if step.error else "ERROR")
        _say(f"{step.index:>2} {step.tool}({json.dumps(step.arguments, default=str)}) -> {outcome}", indent=2)
    for turn in (t for t in record.conversation if t.step >= len(record.trace)):
        _say(f"{turn.role}: {clip(turn.text, OUTPUT_CHARS)}", indent=2)
    _say(f"reply: {record.reply}")
    if record.verdict is not None:
        _say("verdict", style="bold")
        for result in record.verdict.results:
            mark = "ok  " if result.passed else "FAIL"
            detail = f" — {result.detail}" if result.detail else ""
            _say(f"{mark} {result.kind}: {result.description}{detail}", indent=2)
        for statement in record.verdict.unjudged:
            _say(f"n/a  unjudged (no judge model): {statement}", indent=2)


def episode_command(
    episode_id: Annotated[str, typer.Argument(help="Episode id (or its first 6+ characters), as reports cite it.")],
    campaign: Annotated[str | None, typer.Option(help="Only the plays of this campaign (every arm).")] = None,
    arm: Annotated[str | None, typer.Option(help="Only the plays of this arm (targeted, uniform, ...).")] = None,
    round_index: Annotated[int | None, typer.Option("--round", help="Only the plays stored in this round.")] = None,
    model: Annotated[str | None, typer.Option(help=(
        "Only the plays of this model, named as gymloop prints it (reference@v3:<hash>, a shorter hash, or a "
        "built-in policy)."))] = None,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one episode as each model played it in each arm: its task, tool calls with results, and verdict.

    The same episode (task, seed, attempt) is played by every round's model in every arm; a round's re-eval is
    also the next round's held-out eval, so it is one play, with every round and stage that holds it. Plays that
    did the same (calls, results, reply, verdict) are shown once, with the models and rounds that played it.
    """
    # Loaded when the command runs, not at gymloop's start-up (tests/flows/test_cli_imports.py).
    from registry import RegistryError

    settings, registry = _open(home)
    wanted = _printed(model, settings) if model is not None else None
    try:
        found = registry.find_episodes(episode_id)
    except RegistryError as exc:
        raise CliError(str(exc)) from exc
    if not found:
        raise CliError(f"no episode {episode_id!r} in {registry.display_url}")
    ids = sorted({r.episode_id for _, _, r in found})
    if len(ids) > 1:
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        raise CliError(f"episode id {episode_id!r} matches {len(ids)} episodes ({shown}); give more characters")
    plays = _plays(registry, found)
    if campaign is not None:
        plays = [p for p in plays if p.campaign == campaign]
    if arm is not None:
        plays = [p for p in plays if p.arm == arm]
    if round_index is not None:
        plays = [p for p in plays if any(w["round"] == round_index for w in p.stored_in)]
    if wanted is not None:
        plays = [p for p in plays if names_model(wanted, p.model)]
    if not plays:
        raise CliError(f"episode {ids[0]} was not played in " + " ".join(
            part for part in (f"campaign {campaign!r}" if campaign else "", f"arm {arm!r}" if arm else "",
                              f"round {round_index}" if round_index is not None else "",
                              f"by model {model!r}" if model else "") if part))
    groups = behaviours(plays)
    if as_json:
        print_json({"episode_id": ids[0], "plays": [p.model_dump(mode="json") for p in plays],
                    "behaviours": [[plays.index(p) for p in group] for group in groups]})
        return
    _say(f"episode {ids[0]}: {len(plays)} play{'s' if len(plays) != 1 else ''} (one per model and arm), "
         f"{len(groups)} different behaviour{'s' if len(groups) != 1 else ''}")
    for number, group in enumerate(groups, start=1):
        console.print()
        _print_behaviour(group, number, len(groups))
