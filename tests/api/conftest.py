"""The API tests: every request here is made with the shared API token configured."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _configured_token(api_token: str) -> str:
    return api_token
