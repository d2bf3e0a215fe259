"""The process's fan-out: one group member however many viewers, each snapshot's frame built once and
handed to every viewer, malformed messages and failed builds skipped without ending the stream."""
from __future__ import annotations

import asyncio
import json
import logging

import pytest
from channels.layers import get_channel_layer

from gpu_engine import wire
from gpu_engine.publisher import SnapshotPublisher
from statuspanel.stream import frames as frames_module
from statuspanel.stream.fanout import Fanout, fanout_for
from statuspanel.stream.layers import FanoutInMemoryChannelLayer
from tests.credentials import TOKEN
from tests.panel.helpers import ORIGIN, busy_tracker, communicator


class Recorder:
    """A viewer that keeps what it is handed."""

    def __init__(self, with_html: bool = False) -> None:
        self.with_html = with_html
        self.got: list[tuple[str, int, str]] = []
        self.documents: list[dict] = []
        self.arrived = asyncio.Event()

    def push_snapshot(self, engine_id: str, seq: int, frame: str) -> None:
        self.got.append((engine_id, seq, frame))
        self.arrived.set()

    def push_document(self, snap: dict) -> None:
        self.documents.append(snap)
        self.arrived.set()


def _message(engine_id: str, seq: int) -> dict:
    snap = {"engine_id": engine_id, "seq": seq, "published_at": 1.0, "counters": {"queue_depth": seq}}
    return wire.snapshot_message(engine_id, seq, snap)


async def _arrival(*viewers: Recorder) -> None:
    await asyncio.wait_for(asyncio.gather(*(v.arrived.wait() for v in viewers)), 3)
    for v in viewers:
        v.arrived.clear()


@pytest.mark.asyncio
@pytest.mark.usefixtures("fresh_render_caches")
async def test_one_group_member_serves_every_viewer_and_leaves_with_the_last():
    layer = FanoutInMemoryChannelLayer()
    fan = Fanout(layer, asyncio.get_running_loop())
    viewers = [Recorder() for _ in range(3)]
    for v in viewers:
        await fan.join(v)
    assert len(layer.groups[wire.STATUS_GROUP]) == 1
    await layer.group_send(wire.STATUS_GROUP, _message("eng-a", 1))
    await _arrival(*viewers)
    assert len({id(v.got[0][2]) for v in viewers}) == 1  # one frame object, built once, for all three
    assert json.loads(viewers[0].got[0][2])["snapshot"]["counters"] == {"queue_depth": 1}
    for v in viewers[:2]:
        await fan.leave(v)
    assert fan.running and len(layer.groups[wire.STATUS_GROUP]) == 1
    await fan.leave(viewers[2])
    assert not fan.running and not layer.groups.get(wire.STATUS_GROUP)
    await layer.group_send(wire.STATUS_GROUP, _message("eng-a", 2))
    await asyncio.sleep(0.05)
    assert [len(v.got) for v in viewers] == [1, 1, 1]


@pytest.mark.asyncio
@pytest.mark.usefixtures("fresh_render_caches")
async def test_malformed_messages_and_failed_builds_do_not_end_the_stream(caplog):
    layer = FanoutInMemoryChannelLayer()
    fan = Fanout(layer, asyncio.get_running_loop())
    viewer = Recorder(with_html=True)  # its frame parses the snapshot to render it
    await fan.join(viewer)
    await layer.group_send(wire.STATUS_GROUP, {"type": wire.MESSAGE_TYPE, "engine_id": 7, "seq": "x"})
    with caplog.at_level(logging.ERROR, logger="statuspanel.stream.fanout"):
        await layer.group_send(wire.STATUS_GROUP, {"type": wire.MESSAGE_TYPE, "engine_id": "eng-bad", "seq": 1,
                                                   "snapshot_json": "{not json"})
        await layer.group_send(wire.STATUS_GROUP, _message("eng-good", 1))
        await _arrival(viewer)
        for _ in range(50):
            if "could not be built" in caplog.text:
                break
            await asyncio.sleep(0.02)
    assert "eng-bad's frame could not be built" in caplog.text
    assert [(e, s) for e, s, _f in viewer.got] == [("eng-good", 1)]
    assert "engine-body" in json.loads(viewer.got[0][2])["html"]
    await layer.group_send(wire.STATUS_GROUP, {"type": wire.MESSAGE_TYPE, "engine_id": "eng-doc", "seq": 3,
                                               "snapshot": {"engine_id": "eng-doc", "seq": 3}})
    await _arrival(viewer)
    assert viewer.documents == [{"engine_id": "eng-doc", "seq": 3}]
    await fan.leave(viewer)


@pytest.mark.asyncio
@pytest.mark.usefixtures("fresh_render_caches")
async def test_each_engine_is_fanned_out_on_its_own(monkeypatch):
    """An engine whose frame is slow to build holds up neither the others' frames nor its own newest."""
    layer = FanoutInMemoryChannelLayer()
    fan = Fanout(layer, asyncio.get_running_loop())
    viewer = Recorder()
    await fan.join(viewer)
    release = asyncio.Event()
    real = frames_module.encoded_snapshot_frame_async

    async def slow_for_a(engine_id, seq, snapshot_json, *, with_html):
        if engine_id == "eng-slow":
            await release.wait()
        return await real(engine_id, seq, snapshot_json, with_html=with_html)

    monkeypatch.setattr("statuspanel.stream.fanout.encoded_snapshot_frame_async", slow_for_a)
    await layer.group_send(wire.STATUS_GROUP, _message("eng-slow", 1))
    await asyncio.sleep(0.05)  # its build has started and waits
    for seq in (2, 3, 4):  # received while seq 1 is being built: only the newest is fanned out after it
        await layer.group_send(wire.STATUS_GROUP, _message("eng-slow", seq))
        await asyncio.sleep(0.01)
    await layer.group_send(wire.STATUS_GROUP, _message("eng-fast", 1))
    await _arrival(viewer)
    assert [(e, s) for e, s, _f in viewer.got] == [("eng-fast", 1)]
    release.set()
    for _ in range(50):
        if len(viewer.got) == 3:
            break
        await asyncio.sleep(0.02)
    assert [(e, s) for e, s, _f in viewer.got] == [("eng-fast", 1), ("eng-slow", 1), ("eng-slow", 4)]
    await fan.leave(viewer)


@pytest.mark.asyncio
async def test_a_viewer_dropped_without_leaving_is_served_no_more_and_the_group_is_left():
    layer = FanoutInMemoryChannelLayer()
    fan = Fanout(layer, asyncio.get_running_loop())
    viewer = Recorder()
    await fan.join(viewer)
    fan.drop(viewer)  # its consumer ended without a disconnect
    for _ in range(50):
        if not fan.running:
            break
        await asyncio.sleep(0.01)
    assert not fan.running and not layer.groups.get(wire.STATUS_GROUP)
    await layer.group_send(wire.STATUS_GROUP, _message("eng-a", 1))
    await asyncio.sleep(0.05)
    assert viewer.got == []


@pytest.mark.asyncio
async def test_one_fanout_per_loop_and_layer():
    layer, other = FanoutInMemoryChannelLayer(), FanoutInMemoryChannelLayer()
    assert fanout_for(layer) is fanout_for(layer)
    assert fanout_for(other) is not fanout_for(layer)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("api_token", "clean_panel_cache", "fresh_render_caches")
async def test_consumers_share_one_group_member():
    layer = get_channel_layer()
    comms = []
    for _ in range(3):
        comm = communicator(f"/ws/status/?token={TOKEN}&format=json", [ORIGIN])
        connected, _ = await comm.connect()
        assert connected
        comms.append(comm)
    assert len(layer.groups[wire.STATUS_GROUP]) == 1
    pub = SnapshotPublisher(busy_tracker(), "eng-shared", heartbeat_secs=5)
    pub.attach_loop(asyncio.get_running_loop())
    snap = await asyncio.to_thread(pub.publish_now)
    got = [json.loads(await c.receive_from(timeout=3)) for c in comms]
    assert {(f["engine_id"], f["seq"]) for f in got} == {("eng-shared", snap["seq"])}
    for c in comms:
        await c.disconnect()
    assert not layer.groups.get(wire.STATUS_GROUP)
