"""A path that climbs out of the static directories is a 404 with nothing in the log, not a 500
with a traceback (Django's static handler raised SuspiciousFileOperation)."""
from __future__ import annotations

import socket

import pytest
from channels.testing import HttpCommunicator

TRAVERSALS = ["/static/../x", "/static/../manage.py", "/static/statuspanel/../../vastmanager/settings.py",
              "/static/%2e%2e/manage.py"]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_traversal_is_404_on_the_live_server(panel_server, path):
    sock = socket.create_connection(("127.0.0.1", panel_server.port), timeout=10)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    status_line = sock.recv(64).split(b"\r\n")[0]
    sock.close()
    assert status_line == b"HTTP/1.1 404 Not Found"
    assert "Traceback" not in panel_server.log() and "SuspiciousFileOperation" not in panel_server.log()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_traversal_is_404_in_the_application():
    from vastmanager.asgi import build_application

    response = await HttpCommunicator(build_application(), "GET", "/static/../x").get_response()
    assert response["status"] == 404


def test_real_static_files_are_still_served(panel_server):
    import urllib.request

    with urllib.request.urlopen(f"{panel_server.base}/static/statuspanel/panel.js", timeout=10) as response:
        assert response.status == 200 and b"WebSocket" in response.read()
