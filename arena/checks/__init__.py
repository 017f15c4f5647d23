"""Checks every gym and generated variant must pass: conformance (:func:`check_pack`) and the adversarial audit."""

from arena.checks.adversarial import AdversaryResult, audit_task
from arena.checks.conformance import check_pack
from arena.checks.results import CheckResult, ConformanceReport

__all__ = ["AdversaryResult", "CheckResult", "ConformanceReport", "audit_task", "check_pack"]
