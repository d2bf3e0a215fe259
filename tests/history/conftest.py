"""The history tests: real CPU engines (the engine area's factory), a logged-in panel client, and
live snapshots put where the panel reads them (the cache), removed afterwards."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gpu_engine import wire
from tests.engine.conftest import make_engine  # noqa: F401 - the engine area's factory, shared as a fixture
from tests.panel.helpers import clear_panel_cache


@pytest.fixture
def publish() -> Iterator[Callable[[dict[str, Any], str], dict[str, Any]]]:
    """Store a snapshot as engine `engine_id`'s latest, stamped as the publisher would."""
    clear_panel_cache()
    seq = [int(time.time() * 1000)]

    def put(snap: dict[str, Any], engine_id: str) -> dict[str, Any]:
        seq[0] += 1
        snap = dict(snap, engine_id=engine_id, seq=seq[0], published_at=time.time(), heartbeat_secs=30.0)
        from django.core.cache import cache

        wire.store_snapshot(cache, snap, 30.0)
        wire.register_engine(cache, engine_id, time.time())
        return snap

    yield put
    clear_panel_cache()


@pytest.fixture
def panel_client(client, django_user_model):
    """A client logged in as a staff user (the panel's and the history page's auth)."""
    user = django_user_model.objects.create_user("operator", is_staff=True)
    client.force_login(user)
    return client
