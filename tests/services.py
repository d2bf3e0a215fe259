"""Throwaway PostgreSQL databases on the local server, for tests that need the real thing."""
from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

PG_SERVER = "postgresql://postgres@127.0.0.1:5432"


@contextmanager
def private_database(prefix: str) -> Iterator[str]:
    """A fresh database named for this process, dropped (connections forced out) even on failure."""
    import psycopg

    name = f"{prefix}_{os.getpid()}_{secrets.token_hex(4)}"
    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True, connect_timeout=3) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{PG_SERVER}/{name}"
    finally:
        with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
