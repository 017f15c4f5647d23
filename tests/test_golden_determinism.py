"""Same seed, same worlds, packs, traces and verdicts, whatever the process and its hash seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROBE = Path(__file__).resolve().parent / "golden_probe.py"


def _fresh_interpreter(script: Path, hash_seed: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_every_gym_is_identical_in_two_interpreters_with_different_hash_seeds():
    first = _fresh_interpreter(PROBE, "1")
    second = _fresh_interpreter(PROBE, "4242")
    assert set(first) == {"helpdesk", "tracker", "procurement", "crm"}
    for domain, digests in first.items():
        golds = {k: v for k, v in digests.items() if k.startswith("gold:")}
        assert golds and all(v["passed"] for v in golds.values()), domain
        assert digests["world@0"] != digests["world@1"] and digests["pack@0"] != digests["pack@1"]
        differing = sorted(k for k in digests if digests[k] != second[domain].get(k))
        assert not differing, f"{domain}: differs across interpreters: {differing[:10]}"
    assert first == second
