"""The one API token the web tests authenticate with (the HTTP API and the WebSocket alike).

A constant rather than only a fixture because some tests need it at import time: in
`parametrize` lists, in default arguments of their connect helpers and in Hypothesis bodies."""
from __future__ import annotations

TOKEN = "test-api-token-0123456789"
AUTH = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
