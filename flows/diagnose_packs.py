"""Finding the packs a file of episodes came from, so ``gymloop diagnose --episodes`` has the round's context.

Where a pack is looked for, in order:

1. a ``--packs`` folder (pack folders, any depth of one);
2. the registry (its pack store under the gymloop home, then its database): every pack a round played is there;
3. the gym the episodes were played in (built-in or your own), generated again as each episode's record names
   its world (the pack's generator seed and knobs: ``EpisodeRecord.world``). The pack generated is kept when its
   content id is the episodes' pack id. A factory variant holds the tasks its gate accepted out of the pack its
   seed and knobs generate, so its id differs: it is kept when it holds every task the episodes name, and its
   tasks are given to diagnosis under the variant's id. Records written before episodes named their world are
   tried at the episode seeds they recorded and seed 0 (the one ``gymloop eval`` uses). A pack id that is no
   content id (64 hex digits) is generated again only as a factory variant.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from arena.core.domains import available_domains
from arena.core.episode import EpisodeRecord, WorldRef
from arena.core.pack import Pack, PackError, build_pack, read_pack
from flows.weaknesses import diagnosis_context

if TYPE_CHECKING:
    from diagnosis import DiagnosisContext

logger = logging.getLogger(__name__)

_CONTENT_ID = re.compile(r"[0-9a-f]{64}")
"""What a pack's content id looks like (``arena.core.pack.content_id``)."""

PackLookup = Callable[[str], Pack | None]
"""Returns the pack of an id from the registry, or ``None`` when it holds none."""


@dataclass
class EpisodePacks:
    """What a file of episodes asks for: each pack id, its domain, the worlds and seeds recorded, its tasks.

    Attributes:
        domains: Domain of each pack id.
        worlds: The worlds the pack's episodes name (``EpisodeRecord.world``), as JSON keys.
        seeds: Episode seeds the pack's episodes recorded.
        episodes: How many episodes each pack has.
        tasks: Task ids each pack's episodes name.
    """

    domains: dict[str, str] = field(default_factory=dict)
    worlds: dict[str, dict[str, WorldRef]] = field(default_factory=dict)
    seeds: dict[str, set[int]] = field(default_factory=dict)
    episodes: dict[str, int] = field(default_factory=dict)
    tasks: dict[str, set[str]] = field(default_factory=dict)

    def add(self, episode: EpisodeRecord) -> None:
        """Count one episode."""
        pack_id = episode.pack_id
        self.domains.setdefault(pack_id, episode.domain)
        if episode.world is not None:
            self.worlds.setdefault(pack_id, {})[_world_key(episode.world)] = episode.world
        self.seeds.setdefault(pack_id, set()).add(episode.seed)
        self.episodes[pack_id] = self.episodes.get(pack_id, 0) + 1
        self.tasks.setdefault(pack_id, set()).add(episode.task_id)

    @classmethod
    def of(cls, episodes: Iterable[EpisodeRecord]) -> EpisodePacks:
        """Scan ``episodes`` once."""
        out = cls()
        for episode in episodes:
            out.add(episode)
        return out


@dataclass
class FoundPacks:
    """The packs found and where, and the ones missing.

    Attributes:
        packs: Packs found whose content id is the episodes' pack id.
        variants: Factory variants generated again: the episodes' pack id -> the pack their seed and knobs
            generate (another id; it holds every task the episodes name).
        sources: Where each pack id was found (``--packs``, ``registry``, ``gym tracker seed 3``, ...).
        missing: Pack ids not found, with how many episodes each has.
    """

    packs: list[Pack] = field(default_factory=list)
    variants: dict[str, Pack] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)

    def context(self) -> DiagnosisContext:
        """The diagnosis context of the packs found (a variant's tasks under the episodes' pack id)."""
        ctx = diagnosis_context([*self.packs, *self.variants.values()])
        for pack_id, pack in self.variants.items():
            ctx.tasks.update({(pack_id, task.id): task for task in pack.tasks})
        return ctx


def _world_key(world: WorldRef) -> str:
    return json.dumps(world.model_dump(mode="json"), sort_keys=True)


def _folder_packs(folder: Path) -> dict[str, Pack]:
    found: dict[str, Pack] = {}
    candidates = [folder] + sorted(p for p in folder.iterdir() if p.is_dir())
    for path in candidates:
        if not (path / "manifest.json").is_file():
            continue
        try:
            pack = read_pack(path)
        except PackError as exc:
            logger.warning("skipping pack folder %s: %s", path, exc)
            continue
        found[pack.id] = pack
    return found


def _describe(domain: str, world: WorldRef) -> str:
    knobs = f" knobs {json.dumps(world.knobs, sort_keys=True)}" if world.knobs else ""
    return f"gym {domain} seed {world.seed}{knobs}"


class _Generator:
    """Packs generated again from their gym, each world once."""

    def __init__(self) -> None:
        self._built: dict[tuple[str, str], Pack | None] = {}

    def pack(self, domain: str, world: WorldRef) -> Pack | None:
        key = (domain, _world_key(world))
        if key not in self._built:
            try:
                self._built[key] = build_pack(domain, seed=world.seed, knobs=world.knobs, parent=world.parent)
            except ValueError as exc:  # knobs this installation's gym refuses: not the world the episodes name
                logger.warning("cannot generate %s again: %s", _describe(domain, world), exc)
                self._built[key] = None
        return self._built[key]


def find_packs(wanted: EpisodePacks, *, packs_dir: Path | None = None, registry: PackLookup | None = None,
               extra_seeds: Iterable[int] = (0,)) -> FoundPacks:
    """Find the packs ``wanted`` names (see the module's description for where and in which order).

    Args:
        wanted: Pack ids, domains, worlds, seeds and tasks the episodes recorded.
        packs_dir: A folder of pack folders given by the user.
        registry: Looks a pack up in the registry (``None``: no registry).
        extra_seeds: World seeds to try for records that name no world, beyond their episode seeds.

    Raises:
        FileNotFoundError: ``packs_dir`` is not a folder.
    """
    out = FoundPacks()
    local: dict[str, Pack] = {}
    if packs_dir is not None:
        if not packs_dir.is_dir():
            raise FileNotFoundError(f"--packs {packs_dir} is not a folder")
        local = _folder_packs(packs_dir)
    generator = _Generator()
    for pack_id in sorted(wanted.domains):
        domain = wanted.domains[pack_id]
        pack, source = local.get(pack_id), "--packs"
        if pack is None and registry is not None:
            pack, source = registry(pack_id), "registry"
        if pack is None and domain in available_domains():
            worlds = list(wanted.worlds.get(pack_id, {}).values()) or [
                WorldRef(seed=s) for s in sorted(wanted.seeds.get(pack_id, set()) | set(extra_seeds))]
            for world in worlds:
                if not (world.knobs or world.parent) and not _CONTENT_ID.fullmatch(pack_id):
                    continue  # no generated pack has this id, and only a factory variant is matched by its tasks
                built = generator.pack(domain, world)
                if built is None:
                    continue
                if built.id == pack_id:
                    pack, source = built, _describe(domain, world)
                    break
                if (world.knobs or world.parent) and wanted.tasks.get(pack_id, set()) <= {t.id for t in built.tasks}:
                    out.variants[pack_id] = built
                    out.sources[pack_id] = f"{_describe(domain, world)} (a factory variant: its tasks by id)"
                    break
        if pack is not None:
            out.packs.append(pack)
            out.sources[pack_id] = source
        elif pack_id not in out.variants:
            out.missing[pack_id] = wanted.episodes.get(pack_id, 0)
    return out
