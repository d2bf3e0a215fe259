"""A poll whose deadline fires while the collector's loop was busy leaves nothing behind in the
source's one-connection pool: the next polls of the same healthy server succeed.

The loop is blocked the way a busy collector blocks it (a synchronous call on the loop, longer than
the poll's whole deadline) at several moments just after the request went out; an outer
`asyncio.wait_for` cancelled the request half-way at some of them and the pool kept it forever."""
from __future__ import annotations

import asyncio
import time

import pytest

from statuspanel.fleet.errors import Unreachable
from statuspanel.fleet.transport import SourceConfig, fetch, make_client
from tests.fleet.cuzk_server import CuzkServer

INTERVAL = 0.3  # connect and read timeouts of 1 s each: the whole poll's deadline is 2 s
BLOCK_SECS = 2.5


async def _poll_blocked_then_again(cfg: SourceConfig, block_after: float) -> tuple[str, list[str]]:
    client = make_client(cfg)
    try:
        await fetch(client, cfg)  # a kept-alive connection, as between two polls
        blocked = asyncio.ensure_future(fetch(client, cfg))
        await asyncio.sleep(block_after)
        time.sleep(BLOCK_SECS)  # the loop is busy past the deadline (a render, a slow call)
        try:
            first = f"ok {len(await blocked)}"
        except Unreachable as exc:
            first = str(exc)
        later = []
        for _ in range(3):
            try:
                later.append(f"ok {len(await fetch(client, cfg))}")
            except Unreachable as exc:
                later.append(str(exc))
        return first, later
    finally:
        await client.aclose()


@pytest.mark.parametrize("block_after", [0.0, 0.0005, 0.001, 0.002, 0.005, 0.01])
def test_polls_after_a_deadline_that_fired_on_a_busy_loop_succeed(block_after) -> None:
    with CuzkServer("fixture") as server:
        cfg = SourceConfig(id=1, name="busy-loop", kind="cuzk", transport="http", url=server.url,
                           interval_secs=INTERVAL)
        first, later = asyncio.run(_poll_blocked_then_again(cfg, block_after))
    assert first.startswith("ok") or first.startswith("timeout"), first
    assert all(outcome.startswith("ok") for outcome in later), (first, later)
