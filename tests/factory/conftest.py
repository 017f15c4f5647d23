from __future__ import annotations

from typing import Any

import pytest
from factory_helpers import DOMAIN

from arena.core.pack import Pack, build_pack
from factory_client import LocalFactory


@pytest.fixture(scope="session")
def base_pack() -> Pack:
    return build_pack(DOMAIN, seed=0)


@pytest.fixture(scope="session")
def local_factory() -> Any:
    factory = LocalFactory()
    yield factory
    factory.close()
