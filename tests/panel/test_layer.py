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


@pytest.mark.asyncio
async def test_group_send_copies_once_and_each_member_gets_its_own_message():
    layer = FanoutInMemoryChannelLayer()
    first, second = await layer.new_channel(), await layer.new_channel()
    for ch in (first, second):
        await layer.group_add("g", ch)
    message = {"type": "x.y", "nested": {"n": 1}}
    await layer.group_send("g", message)
    message["nested"]["n"] = 2  # the sender's later change never reaches a receiver
    got_first = await asyncio.wait_for(layer.receive(first), 1)
    got_first["type"] = "changed"  # nor does one member's change of its own message reach another
    got_second = await asyncio.wait_for(layer.receive(second), 1)
    assert got_second == {"type": "x.y", "nested": {"n": 1}}


@pytest.mark.asyncio
async def test_a_full_member_loses_the_message_and_the_others_get_it():
    layer = FanoutInMemoryChannelLayer(capacity=1)
    full, reader = await layer.new_channel(), await layer.new_channel()
    for ch in (full, reader):
        await layer.group_add("g", ch)
    await layer.group_send("g", {"type": "x.y", "n": 1})
    assert (await asyncio.wait_for(layer.receive(reader), 1))["n"] == 1
    await layer.group_send("g", {"type": "x.y", "n": 2})  # `full` still holds n=1: n=2 is dropped for it
    assert (await asyncio.wait_for(layer.receive(reader), 1))["n"] == 2
    assert (await asyncio.wait_for(layer.receive(full), 1))["n"] == 1
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(layer.receive(full), 0.1)


@pytest.mark.asyncio
async def test_a_newer_snapshot_replaces_the_unreceived_one_of_its_engine():
    layer = FanoutInMemoryChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add("g", channel)
    for seq in (1, 2, 3):
        await layer.group_send("g", {"type": "status.snapshot", "engine_id": "a", "seq": seq})
    await layer.group_send("g", {"type": "status.snapshot", "engine_id": "b", "seq": 7})
    await layer.group_send("g", {"type": "other.kind", "engine_id": "a", "seq": 9})  # never coalesced
    got = [await asyncio.wait_for(layer.receive(channel), 1) for _ in range(3)]
    assert [(m["type"], m["engine_id"], m["seq"]) for m in got] == [
        ("status.snapshot", "a", 3), ("status.snapshot", "b", 7), ("other.kind", "a", 9)]
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(layer.receive(channel), 0.1)
    # Once received, the next snapshot of the engine queues again (nothing is replaced after delivery).
    await layer.group_send("g", {"type": "status.snapshot", "engine_id": "a", "seq": 4})
    assert (await asyncio.wait_for(layer.receive(channel), 1))["seq"] == 4


@pytest.mark.asyncio
async def test_an_expired_snapshot_is_not_replaced_by_a_newer_one():
    layer = FanoutInMemoryChannelLayer(expiry=0.05, sweep_interval=0)
    channel = await layer.new_channel()
    await layer.group_add("g", channel)
    await layer.group_send("g", {"type": "status.snapshot", "engine_id": "a", "seq": 1})
    await asyncio.sleep(0.1)
    await layer.group_send("nobody", {"type": "x.y"})  # the sweep runs: seq 1 expires, the channel leaves "g"
    assert channel not in layer.groups.get("g", {})
    await layer.group_add("g", channel)
    await layer.group_send("g", {"type": "status.snapshot", "engine_id": "a", "seq": 2})
    assert (await asyncio.wait_for(layer.receive(channel), 1))["seq"] == 2
