"""Agents written blind to gymloop's diagnosis, each injecting one known mistake, to measure it honestly.

Each ``BlindAgent`` plays a competent intent-following policy (``_policy.Episode``) with exactly one mistake
injected in one style (or none: the clean agents). ``play`` runs an agent on every task of a built-in gym's base
pack and returns the episodes its mistake applied to, each with its label: the weakness kind injected (a key of
``diagnosis.knobs.KIND_TARGETS``), ``clean``, or ``novel:<name>`` for a failure mode none of those kinds names.
"""

from __future__ import annotations

from bench.blind_agents._catalog import AGENTS
from bench.blind_agents._run import base_pack, play
from bench.blind_agents._spec import BlindAgent

__all__ = ["AGENTS", "BlindAgent", "base_pack", "play"]
