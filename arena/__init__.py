"""The arena: gyms, packs, agents, rollouts, verifiers and metrics."""
