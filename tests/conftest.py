"""Fixtures every area shares, defined once: the session's parameter directory, the API token, and
headless Chromium with a logged-in panel page."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.credentials import TOKEN
from tests.panel.helpers import clear_panel_cache


@pytest.fixture(scope="session")
def params_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One Groth16 parameter directory per session, prepared here explicitly (parameters are a trusted
    setup: nothing generates them on a first read): every kind's setup at scale 1 (about 2 s in all) is
    paid once, then read from disk by engines, pool children, subprocesses and the Groth16 tests alike
    (params are also cached in memory per directory, so sharing the directory shares that cache too)."""
    from gpu_engine.groth16 import api

    directory = tmp_path_factory.mktemp("params")
    for kind in api.PROOF_KINDS:
        api.load_params(kind, directory, 1, create=True)
    return directory


@pytest.fixture
def clean_panel_cache() -> Iterator[None]:
    """No engine snapshots in Django's cache before or after: the cache is shared by every test."""
    clear_panel_cache()
    yield
    clear_panel_cache()


@pytest.fixture
def api_token(settings) -> str:
    """Configure the shared API token (so no token file is generated into the data directory)."""
    settings.VASTMANAGER_TOKEN = TOKEN
    return TOKEN


# Debian's Chromium (a test tool's own browser download fails here); as root it needs --no-sandbox.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"]


@pytest.fixture
def chromium() -> Iterator[Any]:
    """A headless Chromium (playwright's Browser), closed after the test."""
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is missing: `make browser` (apt-get install chromium chromium-driver)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        # launch() gives the browser a fresh temporary profile (its own --user-data-dir) every time.
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def panel_login(chromium) -> Callable[..., Any]:
    """`panel_login(base, token, width=1400, height=1000, javascript=True) -> Page`: a fresh browser
    context (its own cookies and localStorage) logged in with the token, on the panel. Uncaught
    page errors are collected in `page.js_errors`."""
    def login(base: str, token: str, *, width: int = 1400, height: int = 1000, javascript: bool = True) -> Any:
        context = chromium.new_context(viewport={"width": width, "height": height}, java_script_enabled=javascript)
        page = context.new_page()
        page.js_errors = []
        page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))
        page.goto(f"{base}/login?token={token}")
        assert page.url.rstrip("/") == base.rstrip("/"), page.url
        return page

    return login
