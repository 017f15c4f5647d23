"""Benchmarks: each script prints its figures against a named anchor or floor."""
