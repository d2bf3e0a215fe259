"""Fixtures every area shares, defined once: the session's parameter directory and the API token."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.credentials import TOKEN


@pytest.fixture(scope="session")
def params_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One Groth16 parameter directory per session: each shape's setup (seconds) is paid once, then read
    from disk by engines, subprocesses and the Groth16 tests alike (params are also cached in memory
    per directory, so sharing the directory shares that cache too)."""
    return tmp_path_factory.mktemp("params")


@pytest.fixture
def api_token(settings) -> str:
    """Configure the shared API token (so no token file is generated into the data directory)."""
    settings.VASTMANAGER_TOKEN = TOKEN
    return TOKEN
