"""The one delivery onto the wire honours its sending policy: wait or drop-stale on a busy send, and
what a cancelled send counts as. The server loop runs in a thread of its own, as Daphne's does."""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
from channels.layers import InMemoryChannelLayer

from gpu_engine import delivery
from gpu_engine.delivery import Busy, Delivery, SendPolicy
from gpu_engine.publisher import PUBLISHER_POLICY
from statuspanel.fleet.collector import COLLECTOR_POLICY


class GatedLayer(InMemoryChannelLayer):
    """A real in-memory layer whose group sends wait until the gate opens (a busy server loop)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.sent: list[int] = []

    async def group_send(self, group: str, message: dict) -> None:
        while not self.gate.is_set():
            await asyncio.sleep(0.005)
        self.sent.append(message["seq"])
        await super().group_send(group, message)


class BrokenLayer(InMemoryChannelLayer):
    async def group_send(self, group: str, message: dict) -> None:
        raise ConnectionError("layer down")


@pytest.fixture
def server_loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def _message(seq: int, engine_id: str = "engine-a") -> dict:
    return {"type": "status.snapshot", "engine_id": engine_id, "seq": seq, "snapshot_json": "{}"}


def _until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


def _cancel_sends_on(loop: asyncio.AbstractEventLoop) -> None:
    """What a server shutting down does to the tasks still on its loop."""
    def cancel_all() -> None:
        for task in asyncio.all_tasks(loop):
            task.cancel()

    loop.call_soon_threadsafe(cancel_all)


def test_the_callers_choose_their_policies() -> None:
    assert PUBLISHER_POLICY == SendPolicy(busy=Busy.WAIT, cancelled_is_error=True)
    assert COLLECTOR_POLICY == SendPolicy(busy=Busy.DROP_STALE, cancelled_is_error=False)


def test_wait_delivers_every_message_in_order(server_loop) -> None:
    layer = GatedLayer()
    sender = Delivery(SendPolicy(Busy.WAIT, cancelled_is_error=True), channel_layer=layer)
    sender.attach_loop(server_loop)
    sender.send(_message(1))
    threading.Timer(0.2, layer.gate.set).start()
    sender.send(_message(2))  # returns once the first is delivered
    assert layer.sent[:1] == [1]
    sender.close()  # waits for the last one
    assert layer.sent == [1, 2] and sender.errors == 0


def test_drop_stale_skips_a_message_while_the_previous_is_in_flight(server_loop) -> None:
    layer = GatedLayer()
    sender = Delivery(SendPolicy(Busy.DROP_STALE, cancelled_is_error=False), channel_layer=layer)
    sender.attach_loop(server_loop)
    sender.send(_message(1))
    started = time.monotonic()
    sender.send(_message(2))  # busy: dropped at once
    assert time.monotonic() - started < 0.5
    sender.send(_message(1, engine_id="engine-b"))  # another engine's send is not held back
    layer.gate.set()
    _until(lambda: not sender.busy("engine-a") and not sender.busy("engine-b"))
    sender.send(_message(3))
    _until(lambda: not sender.busy("engine-a"))
    assert sorted(layer.sent) == [1, 1, 3] and 2 not in layer.sent and sender.errors == 0


def test_wait_gives_up_a_stalled_send_and_counts_it(server_loop, monkeypatch) -> None:
    monkeypatch.setattr(delivery, "SEND_TIMEOUT_SECS", 0.2)
    layer = GatedLayer()  # the gate never opens: a stalled server loop
    sender = Delivery(SendPolicy(Busy.WAIT, cancelled_is_error=True), channel_layer=layer)
    sender.attach_loop(server_loop)
    sender.send(_message(1))
    sender.send(_message(2))  # waits 0.2 s for the first, cancels it: an error
    assert sender.errors == 1
    sender.stopping()
    sender.close()  # the second times out too, but at shutdown: not an error
    assert sender.errors == 1 and layer.sent == []


@pytest.mark.parametrize("cancelled_is_error", [True, False])
def test_a_send_cancelled_by_its_loop_counts_as_the_policy_says(server_loop, cancelled_is_error) -> None:
    layer = GatedLayer()
    sender = Delivery(SendPolicy(Busy.DROP_STALE, cancelled_is_error=cancelled_is_error), channel_layer=layer)
    sender.attach_loop(server_loop)
    sender.send(_message(1))
    _cancel_sends_on(server_loop)
    _until(lambda: not sender.busy("engine-a"))
    assert sender.errors == (1 if cancelled_is_error else 0)


def test_a_send_cancelled_at_shutdown_is_never_an_error(server_loop) -> None:
    layer = GatedLayer()
    sender = Delivery(SendPolicy(Busy.DROP_STALE, cancelled_is_error=True), channel_layer=layer)
    sender.attach_loop(server_loop)
    sender.send(_message(1))
    sender.stopping()
    _cancel_sends_on(server_loop)
    _until(lambda: not sender.busy("engine-a"))
    assert sender.errors == 0


@pytest.mark.parametrize("policy", [PUBLISHER_POLICY, COLLECTOR_POLICY])
def test_a_failing_send_is_counted_under_either_policy(server_loop, policy) -> None:
    sender = Delivery(policy, channel_layer=BrokenLayer())
    sender.attach_loop(server_loop)
    sender.send(_message(1))
    _until(lambda: not sender.busy("engine-a"))
    assert sender.errors == 1


def test_on_a_running_loop_without_a_server_loop_sends_are_tasks_and_drop_when_busy() -> None:
    async def scenario() -> list[int]:
        layer = GatedLayer()
        sender = Delivery(COLLECTOR_POLICY, channel_layer=layer)
        sender.send(_message(1))
        sender.send(_message(2))  # dropped: the first is still a pending task on this loop
        layer.gate.set()
        while sender.busy("engine-a"):
            await asyncio.sleep(0.005)
        return layer.sent

    assert asyncio.run(scenario()) == [1]


def test_wait_refuses_to_block_a_running_loop() -> None:
    async def scenario() -> None:
        sender = Delivery(PUBLISHER_POLICY, channel_layer=GatedLayer())
        sender.send(_message(1))
        sender.send(_message(2))

    with pytest.raises(RuntimeError, match="cannot block the running event loop"):
        asyncio.run(scenario())
