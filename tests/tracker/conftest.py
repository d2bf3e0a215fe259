"""The tracker tests: a clock that only moves when the test says so (snapshot invariants live in
`tests.tracker.invariants`, shared with the API tests and the state machine)."""
from __future__ import annotations

import pytest

from tests.tracker.invariants import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
