"""CLI startup benchmark: wall time of ``gymloop --help`` (and ``gymloop gyms list``) in a fresh interpreter.

The anchor is a fresh interpreter importing typer and rich only (what any typer CLI pays); the target for
``gymloop --help`` is 1.5 s. Each command runs ``--runs`` times; the median is printed with its ratio to the
anchor's median, measured in the same run (so machine load affects both alike).

Run: ``python -m bench.bench_cli_startup [--runs 5]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

HELP_TARGET_S = 1.5
CLI = "from flows.cli import app; app()"


def _median_seconds(args: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, *args], capture_output=True, text=True, check=False,
                              env={**os.environ, "COLUMNS": "100"})
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed: {done.stderr[-500:]}")
    return statistics.median(times)


def main() -> None:
    """Print the median startup time of each command and its ratio to the anchor."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    anchor = _median_seconds(["-c", "import typer, rich.console"], runs)
    print(f"anchor (import typer + rich): {anchor:.2f} s")
    for label, args in (("gymloop --help", ["-c", CLI, "--help"]), ("gymloop gyms list", ["-c", CLI, "gyms", "list"])):
        seconds = _median_seconds(args, runs)
        note = f"; target {HELP_TARGET_S} s: {seconds / HELP_TARGET_S:.2f}x" if label.endswith("--help") else ""
        print(f"{label}: {seconds:.2f} s median of {runs} ({seconds / anchor:.1f}x the anchor{note})")


if __name__ == "__main__":
    main()
