"""What the BFCL gym's tests share: the installed package (or a skip naming the commands), packs built once."""

from __future__ import annotations

from functools import cache

import pytest

from arena.core.pack import Pack, build_pack

bfcl_eval = pytest.importorskip(
    "bfcl_eval", reason="BFCL's package is not installed: pip install -e '.[bfcl]' && "
                        "pip install --no-deps bfcl-eval==2026.3.23")


@cache
def bfcl_pack(*categories: str) -> Pack:
    """The BFCL gym's pack of some categories (built once per test process)."""
    from arena.gyms.bfcl import DOMAIN

    return build_pack(DOMAIN, seed=0, knobs={"categories": list(categories)})
