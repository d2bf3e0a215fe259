"""The local PostgreSQL and Redis servers for tests that need the real thing: whether they answer,
throwaway databases and Redis key prefixes that are removed afterwards, the status group heard
through Redis as a panel process elsewhere hears it, and a benchmark's child run on a fresh database."""
from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
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


def run_on_fresh_database(argv: Sequence[str], database: str, timeout: float = 1800) -> Any:
    """Run `argv` (a bench's child, from the repository root) on a database of its own: an SQLite file
    in a temporary data directory (`sqlite`) or a throwaway PostgreSQL database (`postgres`), without
    Redis; what it printed last, parsed as JSON (its figures). A child that fails raises with its stderr."""
    if database not in ("sqlite", "postgres"):
        raise ValueError(f"database must be sqlite or postgres, not {database!r}")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, VASTMANAGER_DATA_DIR=tmp, DJANGO_SETTINGS_MODULE="vastmanager.settings",
                   LOG_LEVEL="WARNING")
        for var in ("REDIS_URL", "DATABASE_URL"):
            env.pop(var, None)
        with private_database("vastmanager_bench") if database == "postgres" else nullcontext() as url:
            if url is not None:
                env["DATABASE_URL"] = url
            out = subprocess.run(list(argv), env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if out.returncode:
        raise RuntimeError(f"bench child failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


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


def redis_down() -> str | None:
    """None when Redis accepts a connection, else why not (a quick check for a skip at import)."""
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=0.5).close()
    except OSError as exc:
        return f"no Redis at {REDIS_URL}: {exc}"
    return None


@asynccontextmanager
async def redis_status_group() -> AsyncIterator[tuple[Any, Callable[[float], Awaitable[dict[str, Any]]]]]:
    """`(layer, receive)`: a Redis pub/sub channel layer for the code under test to send on, and
    `receive(timeout)` the next status-group message as a panel process elsewhere gets it (a second
    layer on the same private prefix); the group is left and the layers closed at the end."""
    from channels_redis.pubsub import RedisPubSubChannelLayer

    from gpu_engine.wire import STATUS_GROUP

    with private_redis_prefix() as prefix:
        host = {"address": REDIS_URL, "max_connections": 4}
        receiver = RedisPubSubChannelLayer(hosts=[host], prefix=prefix)
        sender = RedisPubSubChannelLayer(hosts=[host], prefix=prefix)
        channel = await receiver.new_channel()
        await receiver.group_add(STATUS_GROUP, channel)

        async def receive(timeout: float) -> dict[str, Any]:
            return await asyncio.wait_for(receiver.receive(channel), timeout)

        try:
            yield sender, receive
        finally:
            await receiver.group_discard(STATUS_GROUP, channel)
            await receiver.flush()


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
