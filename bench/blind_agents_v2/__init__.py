"""A second set of agents written blind to gymloop's diagnosis, each making one known mistake, to measure it.

Each agent is the careful reference policy (``PolicyParams.expert()``, which passes every task) playing through a
hand that slips in one known way (``_hand.Hand`` and the ``_slips_*`` modules): a name passed as an id, a check
skipped, a legacy date sent as written, a conflicting write retried blind, a search summary trusted, a task handed
over after one read, a note nobody asked for, a change claimed but never made, an internal value in the reply, a
timeout taken as the end. Where its mistake does not apply to a task the agent plays it cleanly, in its own voice.

The interface is the first set's (``bench.blind_agents``): ``AGENTS`` (``BlindAgent`` specs), ``base_pack`` and
``play``, which returns the episodes an agent's mistake applied to with its label: a weakness kind (a key of
``diagnosis.knobs.KIND_TARGETS``), two kinds joined by ``+`` (primary first) when one mistake is both, ``clean``,
or ``novel:<name>`` for a failure mode no kind names. An episode whose task the agent's clean twin (same voice, no
mistake) fails is left out, so every labelled failure is the mistake's.
"""

from __future__ import annotations

from bench.blind_agents._spec import BlindAgent
from bench.blind_agents_v2._catalog import AGENTS
from bench.blind_agents_v2._play import Played, base_pack, play, play_all

__all__ = ["AGENTS", "BlindAgent", "Played", "base_pack", "play", "play_all"]
