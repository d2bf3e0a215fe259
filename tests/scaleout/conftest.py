"""The scale-out test: a cluster of real processes over the local PostgreSQL and Redis."""
from __future__ import annotations

import pytest

from tests.services import services_up


@pytest.fixture
def services() -> None:
    """Skip, saying which, unless both PostgreSQL and Redis answer."""
    reason = services_up()
    if reason:
        pytest.skip(reason)
