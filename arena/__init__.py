"""Everything an episode needs, in rooms, each built only on the rooms listed before it.

- ``arena.core``: the gym runtime (domains and their registry, packs, tasks, tools, the gym, verification,
  episode records, metrics, redaction of secrets); its public names are in ``arena.core.__all__``.
- ``arena.authoring``: the kit gyms are written with (``make_domain``, templates and drafts, checks, faults, splits,
  the shared knob vocabulary, the reply rules added to every task); docs/writing-a-gym.md. It derives gold programs
  by playing the careful reference policy of ``arena.agents``, imported when a gym first needs one (that room
  imports only the runtime, so there is no cycle).
- ``arena.gyms``: the built-in gyms, one folder each.
- ``arena.agents``: agents (the reference policy, LLMs through litellm or the OpenAI protocol, local checkpoints).
- ``arena.rollout``: the rollout engine (episodes on threads, an event loop or worker processes).
- ``arena.checks``: conformance and the adversarial audit every gym and generated variant must pass.
- ``arena.serve``: gyms as services (MCP, OpenEnv, Docker) and the bearer-token guard of HTTP surfaces.
- ``arena.adapters``: gyms as environments of other training libraries (TRL).
"""
