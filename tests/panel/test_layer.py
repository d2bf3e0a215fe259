"""The fan-out in-memory layer still expires messages and drops their channels from groups."""
from __future__ import annotations

import asyncio

import pytest
from channels.layers import get_channel_layer

from statuspanel.stream.layers import FanoutInMemoryChannelLayer


@pytest.mark.asyncio
async def test_broadcast_delivers_to_every_member():
    layer = FanoutInMemoryChannelLayer()
    channels = [await layer.new_channel() for _ in range(5)]
    for ch in channels:
        await layer.group_add("g", ch)
    await layer.group_send("g", {"type": "x.y", "n": 1})
    got = await asyncio.gather(*(asyncio.wait_for(layer.receive(ch), 1) for ch in channels))
    assert [m["n"] for m in got] == [1] * 5


@pytest.mark.asyncio
async def test_expired_messages_are_swept_at_the_interval():
    layer = FanoutInMemoryChannelLayer(expiry=0.05, sweep_interval=0.1)
    alive, dead = await layer.new_channel(), await layer.new_channel()
    for ch in (alive, dead):
        await layer.group_add("g", ch)
    await layer.send(dead, {"type": "x.y"})
    await asyncio.sleep(0.15)
    await layer.group_send("g", {"type": "x.z"})  # the sweep runs here: `dead` held an expired message
    assert dead not in layer.groups.get("g", {})
    assert (await asyncio.wait_for(layer.receive(alive), 1))["type"] == "x.z"


def test_bad_interval_is_rejected():
    with pytest.raises(ValueError):
        FanoutInMemoryChannelLayer(sweep_interval=-1)


def test_settings_use_it_in_the_embedded_mode(settings):
    if settings.CHANNEL_LAYERS["default"]["BACKEND"].endswith("RedisPubSubChannelLayer"):
        pytest.skip("scale-out settings")
    assert isinstance(get_channel_layer(), FanoutInMemoryChannelLayer)
