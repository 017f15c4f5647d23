"""How every view states a transfer suite's result (``flows.transfer``): the round table, report and compare.

Light on imports (the CLI's tables read it at start-up).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flows.models import RoundSummary, TransferResult


def interval(result: TransferResult) -> str:
    """A suite's lift with its interval, as every view prints it: ``+0.025 [-0.050, +0.100]``."""
    return f"{result.lift:+.3f} [{result.lift_low:+.3f}, {result.lift_high:+.3f}]"


def transfer_cell(found: Sequence[TransferResult]) -> str:
    """One table cell for a round's suites: ``tau2-retail +0.025 [-0.050, +0.100]; ...``."""
    return "; ".join(f"{r.suite} {interval(r)}" for r in found)


def report_section(summaries: Sequence[RoundSummary], campaign: Sequence[TransferResult]) -> list[str]:
    """The report's transfer section: per round and suite, pass rates and lift beside the in-gym lift."""
    if not any(s.transfer for s in summaries):
        return []
    lines = ["## Transfer suites", "",
             "Gyms the campaign never trains, diagnoses or varies, played on their held-out split by the model "
             "before and after each round (same episodes); lift with its 95% paired interval over tasks, beside "
             "the in-gym lift.", ""]
    lines += [f"- {r.suite}, over the campaign: {r.before:.3f} -> {r.after:.3f}, lift {interval(r)} ({r.tasks} tasks)"
              for r in campaign]
    lines += ["", "| round | suite | before | after | lift | 95% interval | in-gym lift |",
              "| ---: | --- | ---: | ---: | ---: | --- | ---: |"]
    lines += [f"| {s.round_index} | {r.suite} | {r.before:.3f} | {r.after:.3f} | {r.lift:+.3f} | "
              f"[{r.lift_low:+.3f}, {r.lift_high:+.3f}] | {s.lift:+.3f} |" for s in summaries for r in s.transfer]
    return [*lines, ""]
