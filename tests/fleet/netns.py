"""Network namespaces for the fleet tests: "hosts" of their own, reached over veth pairs, so traffic
really crosses interfaces and a link can be pulled.

    with NetnsLab() as lab:
        box = lab.host("gpu")            # namespace + veth pair + addresses, lo up
        proc = box.popen([...])          # a process inside it
        server = box.serve([...])        # one that says `listening on` when ready
        box.link_down(); box.link_up()   # the box's side of the cable
        check_link_pull(dash, box, "box-gpu", interval)   # a dashboard's source of it goes and comes back

Each host gets a /24 of its own (root side .1, the namespace side .2) from a block chosen per test
process, so two test runs at once do not collide. Everything made is removed on exit: processes in
the namespaces are killed, the namespaces deleted (which deletes their veth pairs).
"""
from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fleet.dashboard import Dashboard

IP = shutil.which("ip") or "/usr/sbin/ip"
_counter = itertools.count()


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([IP, *args], capture_output=True, text=True, timeout=20, check=check)


def unavailable_reason() -> str | None:
    """Why namespaces cannot be made here (None when they can): the tests skip with this reason."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if not os.path.exists(IP):
        return "iproute2's `ip` is not installed"
    probe = f"vmprobe{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip() or made.returncode}"
    _ip("netns", "del", probe, check=False)
    return None


@dataclass
class Host:
    """One namespace with a veth pair to the root namespace."""

    name: str
    root_if: str
    ns_if: str
    root_addr: str
    addr: str
    procs: list[subprocess.Popen] = field(default_factory=list)

    def run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([IP, "netns", "exec", self.name, *cmd], capture_output=True, text=True,
                              timeout=30, check=check)

    def popen(self, cmd: Sequence[str], **kwargs: Any) -> subprocess.Popen:
        """A process inside the namespace, in a session of its own (so it is stopped as a group)."""
        kwargs.setdefault("start_new_session", True)
        proc = subprocess.Popen([IP, "netns", "exec", self.name, *cmd], **kwargs)
        self.procs.append(proc)
        return proc

    def serve(self, cmd: Sequence[str]) -> subprocess.Popen:
        """A server inside the namespace that prints `listening on ...` once it listens (the fleet
        tests' cuzk-like servers), returned when it has."""
        proc = self.popen(cmd, stdout=subprocess.PIPE, text=True)
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("listening on"), f"{cmd[1:2]} said {line!r}"
        return proc

    def link_down(self) -> None:
        """Pull the box's cable: its side of the veth goes down (no answers, not even refusals)."""
        _ip("-n", self.name, "link", "set", self.ns_if, "down")

    def link_up(self) -> None:
        _ip("-n", self.name, "link", "set", self.ns_if, "up")
        _ip("-n", self.name, "route", "replace", "default", "via", self.root_addr)

    def stop_processes(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        deadline = time.monotonic() + 5
        for proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        # Anything else still inside (a daemon that forked off) goes with the namespace.
        pids = _ip("netns", "pids", self.name, check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def check_link_pull(dash: Dashboard, box: Host, name: str, interval: float, others: Sequence[str] = ()) -> None:
    """Pull `box`'s cable: the dashboard's source `name` of it is `unreachable` within two intervals
    (plus one /api/fleet round to look) while the `others` stay online, and `online` once it is back."""
    dash.wait_state(name, "online", timeout=30)
    box.link_down()
    try:
        pulled = time.monotonic()
        dash.wait_state(name, "unreachable", timeout=2 * interval + 0.5)
        assert time.monotonic() - pulled <= 2 * interval + 0.5
        engines = dash.fleet()
        for other in others:
            assert engines[other]["source"]["state"] == "online", other
    finally:
        box.link_up()
    dash.wait_state(name, "online", timeout=30)


class NetnsLab:
    """The namespaces of one test; a context manager that removes them all."""

    def __init__(self) -> None:
        self.hosts: list[Host] = []
        # 10.<block>.<n>.0/24 per host; the block from the pid keeps concurrent runs apart.
        self.block = 64 + os.getpid() % 160

    def host(self, label: str) -> Host:
        n = next(_counter) % 250 + 1
        tag = f"{os.getpid() % 100000}{n}"
        name = f"vm{label[:5]}{tag}"
        root_if, ns_if = f"vmr{tag}"[:15], f"vmn{tag}"[:15]
        root_addr, addr = f"10.{self.block}.{n}.1", f"10.{self.block}.{n}.2"
        _ip("netns", "add", name)
        host = Host(name, root_if, ns_if, root_addr, addr)
        self.hosts.append(host)
        _ip("link", "add", root_if, "type", "veth", "peer", "name", ns_if)
        _ip("link", "set", ns_if, "netns", name)
        _ip("addr", "add", f"{root_addr}/24", "dev", root_if)
        _ip("link", "set", root_if, "up")
        _ip("-n", name, "addr", "add", f"{addr}/24", "dev", ns_if)
        _ip("-n", name, "link", "set", ns_if, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", name, "route", "add", "default", "via", root_addr)
        return host

    def close(self) -> None:
        for host in self.hosts:
            host.stop_processes()
            _ip("netns", "del", host.name, check=False)
            _ip("link", "del", host.root_if, check=False)  # gone with the namespace; this is belt and braces
        self.hosts.clear()

    def __enter__(self) -> NetnsLab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
