"""Fixtures every area shares, defined once: the session's parameter directory and the API token."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.credentials import TOKEN


@pytest.fixture(scope="session")
def params_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One Groth16 parameter directory per session, prepared here explicitly (parameters are a trusted
    setup: nothing generates them on a first read): every kind's setup at scale 1 (about 2 s in all) is
    paid once, then read from disk by engines, pool children, subprocesses and the Groth16 tests alike
    (params are also cached in memory per directory, so sharing the directory shares that cache too)."""
    from gpu_engine.groth16 import api

    directory = tmp_path_factory.mktemp("params")
    for kind in api.PROOF_KINDS:
        api.load_params(kind, directory, 1, create=True)
    return directory


@pytest.fixture
def api_token(settings) -> str:
    """Configure the shared API token (so no token file is generated into the data directory)."""
    settings.VASTMANAGER_TOKEN = TOKEN
    return TOKEN
