"""Gyms as environments of other training libraries: TRL's ``environment_factory`` (no torch import here)."""
