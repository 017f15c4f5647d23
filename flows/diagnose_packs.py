"""Finding the packs a file of episodes came from, so ``gymloop diagnose --episodes`` has the flows' context.

Where a pack is looked for, in order: a ``--packs`` folder (pack folders, any depth of one), the pack store
under the gymloop home (where the registry keeps every pack a round played), and the gyms (built-in or your own)
rebuilt at the seeds the episodes recorded (and seed 0, the one ``gymloop eval`` uses), kept only when the rebuilt
pack's content id is the episode's pack id.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from arena.core.domains import available_domains
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack, PackError, build_pack, read_pack
from registry import PackStore, RegistryError

logger = logging.getLogger(__name__)


@dataclass
class EpisodePacks:
    """What a file of episodes asks for: each pack id, its domain, the seeds recorded and how many episodes."""

    domains: dict[str, str] = field(default_factory=dict)
    seeds: dict[str, set[int]] = field(default_factory=dict)
    episodes: dict[str, int] = field(default_factory=dict)

    def add(self, episode: EpisodeRecord) -> None:
        """Count one episode."""
        self.domains.setdefault(episode.pack_id, episode.domain)
        self.seeds.setdefault(episode.pack_id, set()).add(episode.seed)
        self.episodes[episode.pack_id] = self.episodes.get(episode.pack_id, 0) + 1

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
        packs: Packs found.
        sources: Where each found pack came from (``--packs``, ``pack store``, ``gym <domain> seed N``).
        missing: Pack ids not found, with how many episodes each has.
    """

    packs: list[Pack] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)


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


def find_packs(wanted: EpisodePacks, *, packs_dir: Path | None = None, store_root: Path | None = None,
               extra_seeds: Iterable[int] = (0,)) -> FoundPacks:
    """Find the packs ``wanted`` names.

    Args:
        wanted: Pack ids, domains and seeds the episodes recorded.
        packs_dir: A folder of pack folders given by the user.
        store_root: The pack store's folder (``<home>/packs``).
        extra_seeds: World seeds to try for the gyms beyond the recorded ones.

    Raises:
        FileNotFoundError: ``packs_dir`` is not a folder.
    """
    out = FoundPacks()
    local: dict[str, Pack] = {}
    if packs_dir is not None:
        if not packs_dir.is_dir():
            raise FileNotFoundError(f"--packs {packs_dir} is not a folder")
        local = _folder_packs(packs_dir)
    store = PackStore(store_root) if store_root is not None and store_root.is_dir() else None
    built: dict[tuple[str, int], Pack] = {}
    for pack_id in sorted(wanted.domains):
        domain = wanted.domains[pack_id]
        pack, source = local.get(pack_id), "--packs"
        if pack is None and store is not None and store.verify(pack_id):
            try:
                pack, source = store.get(pack_id), "pack store"
            except (RegistryError, PackError) as exc:
                logger.warning("pack %s in the store is unusable: %s", pack_id[:12], exc)
        if pack is None and domain in available_domains():
            for seed in sorted(wanted.seeds.get(pack_id, set()) | set(extra_seeds)):
                key = (domain, seed)
                if key not in built:
                    built[key] = build_pack(domain, seed=seed)
                if built[key].id == pack_id:
                    pack, source = built[key], f"gym {domain} seed {seed}"
                    break
        if pack is None:
            out.missing[pack_id] = wanted.episodes.get(pack_id, 0)
        else:
            out.packs.append(pack)
            out.sources[pack_id] = source
    return out
