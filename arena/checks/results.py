"""What the checks report: one result per check, and a pack's report."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CheckResult(BaseModel):
    """One failed or passed check.

    Attributes:
        task_id: Task checked (empty for pack-level checks).
        check: Check name (``gold_passes``, ``null_fails``, ``replay_deterministic``,
            ``isolated_start``, ``bad_call:<kind>``, ``adversary:<strategy>``).
        passed: Whether the check held (or cannot hold under the gym's verdict: ``waived``).
        detail: Why it failed.
        waived: Why the check cannot hold under the verdict of the benchmark the gym keeps (``Domain.not_applicable``),
            when it did not hold for that reason; empty otherwise.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    check: str
    passed: bool
    detail: str = ""
    waived: str = ""


class ConformanceReport(BaseModel):
    """All checks run over a pack.

    Attributes:
        pack_id: Content id of the pack.
        domain: Domain name.
        tasks: Number of tasks checked.
        results: Every check's result.
    """

    model_config = ConfigDict(extra="forbid")

    pack_id: str
    domain: str
    tasks: int
    results: list[CheckResult] = Field(default_factory=list)

    @property
    def failures(self) -> list[CheckResult]:
        """The checks that did not hold."""
        return [r for r in self.results if not r.passed]

    @property
    def passed(self) -> bool:
        """Whether every check held."""
        return not self.failures

    @property
    def waived(self) -> list[CheckResult]:
        """The checks that cannot hold under the gym's verdict, each with the reason."""
        return [r for r in self.results if r.waived]
