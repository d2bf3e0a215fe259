"""Every open panel refetches an engine's activity region: it is built once and shared for at least a
second (twice its build time when slower), not once per request."""
from __future__ import annotations

import time

import pytest
from django.core.cache import cache

from statuspanel.history import views


@pytest.mark.django_db
def test_activity_region_is_built_once_for_many_panels(panel_client, monkeypatch):
    cache.clear()
    builds = []
    real = views.activity_context

    def counted(*args, **kwargs):
        builds.append(time.monotonic())
        return real(*args, **kwargs)

    monkeypatch.setattr(views, "activity_context", counted)
    bodies = {panel_client.get("/panel/activity/shared-engine").content for _ in range(5)}
    assert len(builds) == 1 and len(bodies) == 1
    panel_client.get("/panel/activity/shared-engine", {"window": "60m"})  # another window: its own build
    assert len(builds) == 2
    time.sleep(views.ACTIVITY_CACHE_SECS + 0.2)
    panel_client.get("/panel/activity/shared-engine")
    assert len(builds) == 3


@pytest.mark.django_db
def test_a_slow_region_is_kept_for_twice_its_build_time(panel_client, monkeypatch):
    cache.clear()
    real = views.activity_context
    kept = []

    def slow(*args, **kwargs):
        time.sleep(1.2)
        return real(*args, **kwargs)

    real_set = cache.set
    monkeypatch.setattr(views, "activity_context", slow)
    monkeypatch.setattr(views.cache, "set", lambda key, value, timeout: (kept.append(timeout), real_set(key, value, timeout)))
    panel_client.get("/panel/activity/slow-engine")
    assert kept == [3]
