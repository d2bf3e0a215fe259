"""The API tests: every request here is made with the shared API token configured; the tests of the
real server share one `servepanel` process (its own data directory and SQLite file)."""
from __future__ import annotations

import pytest

from tests.credentials import TOKEN
from tests.process_support import ServedSite

# The live server's body limit: small, so tests cross it without sending much.
SERVER_BODY_LIMIT = 64 * 1024


@pytest.fixture(autouse=True)
def _configured_token(api_token: str) -> str:
    return api_token


@pytest.fixture(scope="session")
def panel_server(tmp_path_factory) -> ServedSite:
    site = ServedSite(tmp_path_factory.mktemp("panel-server"), TOKEN, MAX_REQUEST_BYTES=str(SERVER_BODY_LIMIT))
    site.start("servepanel")
    yield site
    site.stop()
