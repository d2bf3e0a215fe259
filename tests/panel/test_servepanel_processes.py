"""`servepanel --processes 2`: two server processes share the port, each serves the stream (its
viewers get the engine's frames through the one Redis), and more than one process without Redis is
refused with the reason."""
from __future__ import annotations

import asyncio
import json
import subprocess

import psutil
import pytest
import websockets

from tests.credentials import TOKEN
from tests.panel.redis_feed import fed_panel
from tests.process_support import ServedSite
from tests.services import services_up

pytestmark = pytest.mark.slow

CLIENTS = 16


def _holder(children: list[psutil.Process], local_port: int) -> int | None:
    """The pid of the server process holding the connection from `local_port`."""
    for child in children:
        if any(c.raddr and c.raddr.port == local_port and c.status == psutil.CONN_ESTABLISHED
               for c in child.net_connections(kind="tcp")):
            return child.pid
    return None


async def _viewers(port: int, children: list[psutil.Process]) -> list[tuple[int | None, list[dict]]]:
    url = f"ws://127.0.0.1:{port}/ws/status/?token={TOKEN}&format=json"

    async def one() -> tuple[int | None, list[dict]]:
        async with websockets.connect(url, origin=f"http://127.0.0.1:{port}", max_size=None) as ws:
            holder = _holder(children, ws.transport.get_extra_info("sockname")[1])
            frames: list[dict] = []
            while len(frames) < 2:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 20))
                if frame.get("type") == "snapshot":
                    frames.append(frame)
            return holder, frames

    return await asyncio.gather(*(one() for _ in range(CLIENTS)))


@pytest.mark.skipif(services_up() is not None, reason="needs PostgreSQL and Redis")
def test_two_processes_share_the_port_and_both_serve_the_stream(tmp_path):
    with fed_panel(tmp_path, "--processes", "2") as site:
        children = psutil.Process(site.proc.pid).children()
        assert len(children) == 2, children
        results = asyncio.run(_viewers(site.port, children))
        holders = [holder for holder, _frames in results]
        assert set(holders) == {c.pid for c in children}, holders  # SO_REUSEPORT spread them over both
        for _holder_pid, frames in results:
            assert [f["engine_id"] for f in frames] == ["redis-fed-engine", "redis-fed-engine"]
            assert frames[0]["seq"] < frames[1]["seq"]
        assert "Traceback" not in site.log(), site.log()[-3000:]


def test_more_than_one_process_without_redis_is_refused(tmp_path):
    site = ServedSite(tmp_path, TOKEN)
    done = subprocess.run([site.python, "manage.py", "servepanel", "--bind", "127.0.0.1:0", "--processes", "2"],
                          cwd=site.root, env=site.env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "--processes above 1 needs REDIS_URL" in done.stderr, done.stderr


def test_a_process_count_out_of_range_is_refused(tmp_path):
    site = ServedSite(tmp_path, TOKEN)
    done = subprocess.run([site.python, "manage.py", "servepanel", "--processes", "0"],
                          cwd=site.root, env=site.env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "must be between 1 and 64" in done.stderr, done.stderr
