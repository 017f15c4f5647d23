"""A campaign is a contract: what its rounds are measured against, recorded with it and checked before each round.

The contract of a round: each gym's base pack (its id is the hash of the gym's tools, policy, world and tasks for
seed 0, so an edited gym gives another), a hash of each gym's code (the Python files of the folders holding its
world generator and its tools: a tool's behaviour changes no pack), the size of the held-out suite, the same of
the transfer suites (``flows.transfer``) when the campaign has any, and the
settings of the campaign's sections (:data:`flows.settings.CAMPAIGN_SECTIONS`, without the machine's
:data:`flows.settings.LOCAL_SETTINGS`), as ``GymloopSettings.public_dict`` shows them (a model's endpoint masked).
The registry keeps it as the campaign's baseline 0 when the first round starts (``Registry.open_round``).

Before a later round plays any episode, its contract is compared with the campaign's last baseline on what
measures a round: the gyms and the settings of :data:`MEASURED_SECTIONS`. A difference stops the round with one
line naming each change and where its value came from (:class:`ContractChanged`); ``--accept-change`` records it
as a new baseline starting at that round instead, which the round's summary carries (``baseline``): lifts are
paired within a round, never across baselines.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from arena.core.domains import GymLoadError, get_domain
from arena.core.pack import Pack
from arena.core.redact import MASK
from arena.core.text import clip
from flows.settings import (
    CAMPAIGN_SECTIONS,
    LOCAL_SETTINGS,
    SECTION_OF,
    GymloopSettings,
    SettingsError,
    describe,
    secret_overrides,
    source_of,
)
from registry import BaselineInfo, Registry

MEASURED_SECTIONS: tuple[str, ...] = ("gyms", "evaluation", "transfer")
"""Settings sections that decide how a round is measured: a change there stops a campaign's next round."""


class ContractChanged(RuntimeError):
    """A round's gyms or measuring settings differ from its campaign's baseline, and no change was accepted."""


def campaign_contract(settings: GymloopSettings, base: Sequence[Pack], suite_size: int,
                      transfer: Sequence[Pack] = (), transfer_size: int = 0) -> dict[str, Any]:
    """What a round is measured against: each gym's base pack id, the held-out suite's size, the campaign's settings.

    Args:
        settings: The round's settings.
        base: The base packs of the round's gyms (seed 0 of each).
        suite_size: Episodes in the held-out suite.
        transfer: The transfer suites' packs (``flows.transfer``), recorded and checked as the gyms are.
        transfer_size: Episodes of the transfer suites on each side of a round.
    """
    recorded = {name: value for name, value in settings.public_dict().items()
                if SECTION_OF.get(name) in CAMPAIGN_SECTIONS and name not in LOCAL_SETTINGS}
    contract = {"gyms": {pack.manifest.domain: pack.id for pack in base},
                "gym_code": {pack.manifest.domain: _code_digests(pack.manifest.domain) for pack in base},
                "suite_episodes": suite_size, "settings": recorded}
    if transfer:
        contract.update({"transfer_gyms": {p.manifest.domain: p.id for p in transfer},
                         "transfer_code": {p.manifest.domain: _code_digests(p.manifest.domain) for p in transfer},
                         "transfer_episodes": transfer_size})
    return contract


def _code_folders(domain: str) -> dict[str, Path]:
    """The packages holding a gym's world generator and its tools' code, by name, with their folders."""
    gym = get_domain(domain)
    found = {}
    for code in (gym.generate, *(t.fn for t in gym.tools.values())):
        module = inspect.getmodule(code)
        path = getattr(module, "__file__", None)
        if module is not None and path is not None:
            found[module.__name__.rpartition(".")[0] or module.__name__] = Path(path).parent
    return dict(sorted(found.items()))


def _code_digests(domain: str) -> dict[str, str]:
    """A hash of each package of a gym's code: every Python file under its folder."""
    digests = {}
    for package, folder in _code_folders(domain).items():
        digest = hashlib.sha256()
        for path in sorted(folder.rglob("*.py")):
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
        digests[package] = digest.hexdigest()[:16]
    return digests


def _measured(contract: Mapping[str, Any], settings: GymloopSettings) -> dict[str, Any]:
    """The contract's settings of the measured sections, by name."""
    names = [n for section in MEASURED_SECTIONS for n in type(getattr(settings, section)).model_fields
             if n not in LOCAL_SETTINGS]
    values = contract.get("settings", {})
    return {n: values.get(n) for n in names}


def _gym_origin(domain: str) -> str:
    """Where a gym's code is read from, for the line naming its change."""
    try:
        module = get_domain(domain).generate.__module__
    except (KeyError, GymLoadError):
        return "a gym this machine does not load"
    return "gymloop's built-in gym" if module.startswith("arena.gyms.") else f"module {module.split('.')[0]}"


def _gym_changes(recorded: Mapping[str, Any], current: Mapping[str, Any], gyms: str, code: str,
                 label: str) -> list[str]:
    """Each gym of both contracts (under ``gyms``, its code's hashes under ``code``) whose pack or code changed."""
    changes = []
    old_gyms, new_gyms = recorded.get(gyms, {}), current.get(gyms, {})
    old_code, new_code = recorded.get(code, {}), current.get(code, {})
    for domain in sorted(set(old_gyms) & set(new_gyms)):  # a gym added or removed: its setting, below
        what = []
        if old_gyms[domain] != new_gyms[domain]:
            what.append(f"base pack {old_gyms[domain][:12]} -> {new_gyms[domain][:12]}")
        if domain in old_code:
            folders = _code_folders(domain)
            edited = [str(folders[p]) for p in sorted(new_code.get(domain, {}))
                      if old_code[domain].get(p) != new_code[domain][p] and p in folders]
            if edited:
                what.append(f"code under {', '.join(edited)}")
        if what:
            changes.append(f"{label} {domain!r} changed: {', '.join(what)} ({_gym_origin(domain)})")
    return changes


def contract_changes(recorded: Mapping[str, Any], current: Mapping[str, Any], settings: GymloopSettings,
                     overrides: Mapping[str, Any], sources: Mapping[str, str] | None = None) -> list[str]:
    """Each difference between a baseline's contract and a round's that changes how the round is measured.

    Args:
        recorded: The campaign's last baseline contract.
        current: The round's contract (:func:`campaign_contract`).
        settings: The round's settings (to tell which settings measure a round).
        overrides: The round's overrides (options and flow parameters), to name where a value came from.
        sources: Where each override came from on the machine that gave it (else found from ``overrides``).

    Returns:
        One phrase per change, e.g. ``eval_seeds [0] -> [0, 1] (environment variable GYMLOOP_EVAL_SEEDS)``.
    """
    changes = [*_gym_changes(recorded, current, "gyms", "gym_code", "gym"),
               *_gym_changes(recorded, current, "transfer_gyms", "transfer_code", "transfer suite")]
    old_settings, new_settings = _measured(recorded, settings), _measured(current, settings)
    for name in sorted(new_settings):
        if name in recorded.get("settings", {}) and old_settings[name] != new_settings[name]:
            shown = f"{clip(repr(old_settings[name]), 60)} -> {clip(repr(new_settings[name]), 60)}"
            changes.append(f"{name} {shown} ({(sources or {}).get(name) or source_of(name, overrides)})")
    return changes


def check_contract(baselines: Sequence[BaselineInfo], contract: Mapping[str, Any], settings: GymloopSettings,
                   overrides: Mapping[str, Any], *, where: str, accept_change: bool,
                   sources: Mapping[str, str] | None = None) -> str | None:
    """The change a round declares from its campaign's last baseline (``None`` when there is none).

    Args:
        baselines: The campaign's baselines, oldest first (none for a new campaign).
        contract: The round's contract.
        settings: The round's settings.
        overrides: The round's overrides (to name where a value came from).
        where: The round, as named in the line (``round 1 of campaign 'c'``).
        accept_change: The round starts a new baseline when its contract changed.
        sources: Where each override came from on the machine that gave it.

    Raises:
        ContractChanged: The contract changed and no change is accepted; one line naming each change.
    """
    if not baselines:
        return None
    changes = contract_changes(baselines[-1].contract, contract, settings, overrides, sources)
    if not changes:
        return None
    if not accept_change:
        raise ContractChanged(
            f"{where} stopped before any episode: {'; '.join(changes)}; its lift would not be measured like "
            f"baseline {baselines[-1].number}'s (from round {baselines[-1].first_round}). Undo the change, run "
            "again with --accept-change to start a new baseline from this round, or start a new campaign")
    return "; ".join(changes)


def lift_baseline(baselines: Sequence[BaselineInfo], finished: Sequence[int]) -> BaselineInfo | None:
    """The baseline a campaign's lift is measured in: the last one holding a finished round.

    A campaign's lift pairs the held-out episodes before its first round with those after its last; across a
    baseline the suite or the gyms differ, so the lift starts at the first round of the latest baseline instead.

    Args:
        baselines: The campaign's baselines, oldest first.
        finished: The indexes of an arm's finished rounds.

    Returns:
        That baseline, or ``None`` when the campaign has none or no round finished.
    """
    last = max(finished, default=None)
    held = [b for b in baselines if last is not None and b.first_round <= last]
    return held[-1] if held else None


def baseline_note(baseline: BaselineInfo | None) -> str:
    """Where a lift measured in ``baseline`` starts and why, for the lines stating it (empty for baseline 0)."""
    if baseline is None or baseline.number == 0:
        return ""
    return (f"from round {baseline.first_round}, where baseline {baseline.number} starts (accepted: "
            f"{baseline.change}); lifts are not paired across baselines")


def _recorded(name: str) -> bool:
    """Whether a setting is recorded with a campaign: of a campaign section, and not this machine's own."""
    return SECTION_OF.get(name) in CAMPAIGN_SECTIONS and name not in LOCAL_SETTINGS


def _masked(value: Any) -> bool:
    """Whether a recorded value was shown masked (an endpoint holding a secret): the machine's own value counts."""
    return isinstance(value, str) and MASK in value


def played_settings(recorded: Mapping[str, Any], overrides: Mapping[str, Any],
                    local: GymloopSettings) -> GymloopSettings:
    """The settings a round plays: the campaign's recorded settings, the round's overrides, this machine's own.

    This machine gives its ``store`` and ``serving`` sections and the settings of
    :data:`flows.settings.LOCAL_SETTINGS` (secrets, endpoints, where gym code lives), which are never recorded, and
    a value recorded masked (an endpoint holding a secret). Its gymloop.toml and ``GYMLOOP_*`` variables give nothing
    else: a setting the record does not hold (one newer than the campaign) takes its default.

    Args:
        recorded: The campaign's recorded settings, by flat name (a baseline's ``contract["settings"]``).
        overrides: The round's overrides, by flat name.
        local: This machine's settings.

    Raises:
        SettingsError: A recorded value or override is refused by this gymloop (named, with where it came from).
    """
    kept = {n: v for n, v in recorded.items() if _recorded(n) and not _masked(v)}
    given = {n: v for n, v in overrides.items() if v is not None and _recorded(n)}
    mine = {n: getattr(getattr(local, section), n) for n, section in SECTION_OF.items()
            if not _recorded(n) or (n not in given and _masked(recorded.get(n)))}
    try:
        return GymloopSettings.model_validate({**kept, **given, **mine})
    except ValidationError as exc:
        raise SettingsError(describe(exc, source="the campaign's recorded settings or the round's overrides")) from None


def campaign_settings(registry: Registry, campaign: str, overrides: Mapping[str, Any],
                      local: GymloopSettings) -> GymloopSettings:
    """The settings of a campaign's next round: its last baseline's, ``overrides`` over them, this machine's own.

    A campaign without a baseline yet (a new one) plays this machine's settings: its first round records them.

    Raises:
        SettingsError: A recorded value or override is refused (see :func:`played_settings`).
    """
    baselines = registry.baselines(campaign)
    recorded = baselines[-1].contract.get("settings", {}) if baselines else local.public_dict()
    return played_settings(recorded, overrides, local)


def round_settings(registry: Registry, round_id: int, local: GymloopSettings) -> GymloopSettings:
    """The settings a started round plays, read from the registry by its id (what its workers play).

    The round's baseline's recorded settings, the overrides recorded with the round, and this machine's own
    (:func:`played_settings`).

    Raises:
        RegistryError: Unknown round.
        SettingsError: A recorded value or override is refused.
    """
    info = registry.round(round_id)
    name = next((c.name for c in registry.campaigns() if c.id == info.campaign_id), None)
    held = [b for b in registry.baselines(name) if b.first_round <= info.index] if name else []
    recorded = held[-1].contract.get("settings", {}) if held else local.public_dict()
    return played_settings(recorded, info.details.get("overrides", {}), local)


def declared_overrides(baselines: Sequence[BaselineInfo], settings: GymloopSettings, overrides: Mapping[str, Any],
                       flags: Mapping[str, str] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """What a command gives its campaign's rounds: its options, and each setting it gives another value than recorded.

    The command's settings (options, ``GYMLOOP_*``, gymloop.toml) are what its user asks for; the rounds play the
    campaign's recorded settings with these overrides (:func:`played_settings`), so that a process elsewhere plays
    the same. A secret, or a value holding one, is never an override: each process reads its own.

    Args:
        baselines: The campaign's baselines (none for a new campaign: its first round records the settings).
        settings: The command's settings.
        overrides: The command's options, by flat name.
        flags: The option each override came from (``{"model": "--model"}``).

    Returns:
        The overrides, and where each came from (named in a change's line).
    """
    given = dict(overrides)
    if baselines:
        recorded = baselines[-1].contract.get("settings", {})
        defaults = GymloopSettings().public_dict()
        changed = {n: v for n, v in settings.public_dict().items()
                   if _recorded(n) and n not in given and not _masked(v) and v != recorded.get(n, defaults.get(n))}
        refused = set(secret_overrides(changed))
        given.update({n: v for n, v in changed.items() if n not in refused})
    return given, {n: source_of(n, overrides, flags) for n in given}

