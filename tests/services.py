"""The local PostgreSQL and Redis servers for tests that need the real thing: whether they answer,
throwaway databases and Redis key prefixes that are removed afterwards."""
from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

PG_SERVER = "postgresql://postgres@127.0.0.1:5432"
REDIS_URL = "redis://127.0.0.1:6379/0"


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


def services_up() -> str | None:
    """None when PostgreSQL and Redis answer, else why not."""
    import psycopg
    import redis

    try:
        psycopg.connect(f"{PG_SERVER}/postgres", connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        return f"no PostgreSQL at {PG_SERVER}: {exc}"
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        return f"no Redis at {REDIS_URL}: {exc}"
    return None


@contextmanager
def private_redis_prefix() -> Iterator[str]:
    """A key prefix nobody else uses; every key under it is deleted at the end."""
    import redis

    prefix = f"vm-test-{secrets.token_hex(6)}"
    try:
        yield prefix
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(match=f"{prefix}*", count=500))
        if keys:
            client.delete(*keys)
        client.close()


def redis_keys(prefix: str) -> list[bytes]:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        return list(client.scan_iter(match=f"{prefix}*", count=500))
    finally:
        client.close()
