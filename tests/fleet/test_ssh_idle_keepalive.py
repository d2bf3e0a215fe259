"""An SSH source whose status server closes idle keep-alive connections stays online: the closed
idle channel is noticed before reuse and a fresh one opened, with no failed poll in between.

Behind the channel is a real HTTP server that drops a kept-alive connection after 0.3 s idle (what
many status servers and proxies do); the collector polls every 0.8 s, so every poll finds the
previous connection closed by the server."""
from __future__ import annotations

import time
from typing import Any

from gpu_engine import wire
from statuspanel.fleet.transport import SourceConfig
from tests.fleet.conftest import wait_until
from tests.fleet.cuzk_server import CuzkServer
from tests.fleet.ssh_server import ForwardingSshServer, client_key

IDLE_CLOSE_SECS = 0.3
INTERVAL = 0.8


class IdleClosingServer(CuzkServer):
    """The cuzk-like server, closing a keep-alive connection idle for IDLE_CLOSE_SECS."""

    def _handler(self) -> Any:
        handler = super()._handler()
        handler.timeout = IDLE_CLOSE_SECS  # http.server closes the connection when a read times out
        return handler


def test_an_ssh_source_whose_server_closes_idle_connections_never_fails_a_poll(collect, tmp_path) -> None:
    key_path = tmp_path / "id_ed25519"
    public = client_key(key_path)
    with IdleClosingServer("fixture") as status, ForwardingSshServer(tmp_path, public) as ssh:
        collector = collect([SourceConfig(
            id=1, name="ssh-idle", kind="cuzk", transport="ssh", ssh_user="fleet", ssh_host="127.0.0.1",
            ssh_port=ssh.port, ssh_key_path=str(key_path), known_hosts_policy="off", remote_port=status.port,
            interval_secs=INTERVAL)])
        wait_until(lambda: collector.states.get("ssh-idle") and collector.states["ssh-idle"].polls >= 1, 15,
                   "the first poll")
        time.sleep(INTERVAL * 8)
        state = collector.states["ssh-idle"]
        assert state.polls >= 6
        assert collector.recorder.states("ssh-idle") == ["online"], collector.recorder.events
        assert state.failures == 0
        assert ssh.channels >= state.polls - 1  # each poll found its old channel closed and opened a new one
        snap = wire.default_cache().get(wire.snapshot_key("ssh-idle"))
        assert snap["source"]["state"] == "online"
