"""The job-queue tests; the PostgreSQL ones get a private database on the local server."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.services import PG_SERVER, private_database


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A throwaway database (dropped afterwards); the test is skipped when no server answers."""
    import psycopg  # the modules that use this fixture skip themselves without psycopg

    try:
        psycopg.connect(f"{PG_SERVER}/postgres", connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL server: {exc}")
    with private_database("vastmanager_test") as url:
        yield url
